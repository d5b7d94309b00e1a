"""The AdamW kernels against the solution notebook's reference, under the simulator.

Both versions, kernels/adamw_step.py (version 1, the teaching kernels) and kernels/adamw_step_v2.py
(the fast one), run every test through the fixture ``version``. Loaded by path, so the
same file works in this kit and in an instructor's own folder.
Sizes stay small (a few blocks of 256 simulated threads); one size is not a multiple of the
block, and an inf in the last block's share must still be seen.
"""
import importlib.util
import os
import sys
from pathlib import Path

if os.environ.get("BACKPROP_TRAPS_REAL_GPU") != "1":  # before numba.cuda is imported
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from backprop_traps.grader.loading.reference import load_solution  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ref = load_solution("adamw_step", ROOT)


def _load(name):
    """kernels/<name>.py by path, registered as importlib's recipe does (its host functions look
    their own module up in sys.modules)."""
    spec = importlib.util.spec_from_file_location(f"kernels_{name}", ROOT / "kernels" / f"{name}.py")
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


kernels = _load("adamw_step")  # version 1, the teaching kernels
VERSIONS = {"v1": kernels}
if (ROOT / "kernels" / "adamw_step_v2.py").is_file():  # version 2 beside it, in this kit
    VERSIONS["v2"] = _load("adamw_step_v2")


@pytest.fixture(params=list(VERSIONS.values()), ids=list(VERSIONS))
def version(request):
    """The module whose host functions a test calls: each version in turn."""
    return request.param


@pytest.mark.parametrize("seed, shape, t, decay", [(0, (7,), 1, True), (1, (3, 5), 10, False), (2, (300,), 4, True)])
def test_the_plain_step_matches_the_reference(version, seed, shape, t, decay):
    rng = np.random.default_rng(seed)
    p, g, m = rng.standard_normal(shape), 0.1 * rng.standard_normal(shape), 0.01 * rng.standard_normal(shape)
    v = 0.01 * rng.random(shape)
    args = (p, g, m, v, t, 0.01, 0.9, 0.999, 1e-8, 0.1, decay)
    for got, want in zip(version.adamw_step(*args), ref.adamw_step(*args)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_the_mixed_step_updates_the_master_and_writes_its_float16_copy(version):
    rng = np.random.default_rng(3)
    master = rng.choice([-1.0, 1.0, 2.0], size=300).astype(np.float32)
    grad16 = (0.1 * rng.standard_normal(300)).astype(np.float16)
    m, v = np.zeros(300, np.float32), np.zeros(300, np.float32)
    args = (master, grad16, m, v, 0, 1e-4, 0.9, 0.999, 1e-8, 0.01, True)
    got, want = version.mixed_precision_step(*args), ref.mixed_precision_step(*args)
    assert got[0].dtype == np.float32 and got[1].dtype == np.float16 and got[4] == want[4] == 1
    for g, w in zip(got[:4], want[:4]):
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=1e-6, atol=1e-9)  # float32: a few ulps
    assert not np.array_equal(got[0], master), "the float32 master keeps steps float16 would lose"


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_an_overflow_anywhere_skips_the_step(version, bad):
    rng = np.random.default_rng(4)
    master, m, v = (rng.standard_normal(600).astype(np.float32) for _ in range(3))
    grad16 = (0.1 * rng.standard_normal(600)).astype(np.float16)
    grad16[599] = bad  # in the last block's share
    assert version.has_nonfinite(grad16)
    got = version.mixed_precision_step(master, grad16, m, v, 7, 1e-3, 0.9, 0.999, 1e-8, 0.01, True)
    assert got[4] == 7 and all(np.array_equal(a, b) for a, b in zip((got[0], got[2], got[3]), (master, m, v)))


def test_the_largest_finite_float16_is_not_an_overflow(version):
    assert not version.has_nonfinite(np.array([65504.0, -65504.0, 0.0], dtype=np.float16))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("seed", [10, 11, 12])
def test_random_sizes_in_both_dtypes(version, seed, dtype):
    """Sizes drawn at random (a partial vector of 4, a partial block), in float64 and float32."""
    rng = np.random.default_rng(seed)
    P = int(rng.integers(1, 700))
    p, g, m = (rng.standard_normal(P).astype(dtype) for _ in range(3))
    v = rng.random(P).astype(dtype)
    args = (int(rng.integers(1, 50)), 1e-3, 0.9, 0.999, 1e-8, 0.01, bool(rng.integers(2)))
    got = version.adamw_step(p, g, m, v, *args)
    want = ref.adamw_step(*(a.astype(np.float64) for a in (p, g, m, v)), *args)
    tol = {"rtol": 1e-12, "atol": 1e-14} if dtype == np.float64 else {"rtol": 1e-5, "atol": 1e-6}
    for a, b in zip(got, want):
        assert a.dtype == dtype and a.shape == (P,)
        np.testing.assert_allclose(a.astype(np.float64), b, **tol)
