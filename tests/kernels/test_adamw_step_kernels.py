"""The AdamW kernels against the solution notebook's reference, under the simulator.

Loaded by path, so the same file works in this kit and in an instructor's own folder.
Sizes stay small (a few blocks of 256 simulated threads); one size is not a multiple of the
block, and an inf in the last block's share must still be seen.
"""
import importlib.util
import os
from pathlib import Path

if os.environ.get("BACKPROP_TRAPS_REAL_GPU") != "1":  # before numba.cuda is imported
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from backprop_traps.grader.loading.reference import load_solution  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ref = load_solution("adamw_step", ROOT)
_spec = importlib.util.spec_from_file_location("kernels_adamw_step", ROOT / "kernels" / "adamw_step.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)


@pytest.mark.parametrize("seed, shape, t, decay", [(0, (7,), 1, True), (1, (3, 5), 10, False), (2, (300,), 4, True)])
def test_the_plain_step_matches_the_reference(seed, shape, t, decay):
    rng = np.random.default_rng(seed)
    p, g, m = rng.standard_normal(shape), 0.1 * rng.standard_normal(shape), 0.01 * rng.standard_normal(shape)
    v = 0.01 * rng.random(shape)
    args = (p, g, m, v, t, 0.01, 0.9, 0.999, 1e-8, 0.1, decay)
    for got, want in zip(kernels.adamw_step(*args), ref.adamw_step(*args)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_the_mixed_step_updates_the_master_and_writes_its_float16_copy():
    rng = np.random.default_rng(3)
    master = rng.choice([-1.0, 1.0, 2.0], size=300).astype(np.float32)
    grad16 = (0.1 * rng.standard_normal(300)).astype(np.float16)
    m, v = np.zeros(300, np.float32), np.zeros(300, np.float32)
    args = (master, grad16, m, v, 0, 1e-4, 0.9, 0.999, 1e-8, 0.01, True)
    got, want = kernels.mixed_precision_step(*args), ref.mixed_precision_step(*args)
    assert got[0].dtype == np.float32 and got[1].dtype == np.float16 and got[4] == want[4] == 1
    for g, w in zip(got[:4], want[:4]):
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=1e-6, atol=1e-9)  # float32: a few ulps
    assert not np.array_equal(got[0], master), "the float32 master keeps steps float16 would lose"


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_an_overflow_anywhere_skips_the_step(bad):
    rng = np.random.default_rng(4)
    master, m, v = (rng.standard_normal(600).astype(np.float32) for _ in range(3))
    grad16 = (0.1 * rng.standard_normal(600)).astype(np.float16)
    grad16[599] = bad  # in the last block's share
    assert kernels.has_nonfinite(grad16)
    got = kernels.mixed_precision_step(master, grad16, m, v, 7, 1e-3, 0.9, 0.999, 1e-8, 0.01, True)
    assert got[4] == 7 and all(np.array_equal(a, b) for a, b in zip((got[0], got[2], got[3]), (master, m, v)))


def test_the_largest_finite_float16_is_not_an_overflow():
    assert not kernels.has_nonfinite(np.array([65504.0, -65504.0, 0.0], dtype=np.float16))
