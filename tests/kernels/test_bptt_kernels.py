"""The BPTT kernels against the solution notebook's reference, under the simulator.

Both versions, kernels/bptt.py (version 1, the teaching kernels) and kernels/bptt_v2.py
(the fast one), run every test through the fixture ``version``. Loaded by path, so the
same file works in this kit and in an instructor's own folder.
Shapes stay small (a launch simulates one or two 16 x 16 blocks); D and H differ, so the
backward's threads past D or past H must still write what they own.
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
ref = load_solution("bptt", ROOT)


def _load(name):
    """kernels/<name>.py by path, registered as importlib's recipe does (its host functions look
    their own module up in sys.modules)."""
    spec = importlib.util.spec_from_file_location(f"kernels_{name}", ROOT / "kernels" / f"{name}.py")
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


kernels = _load("bptt")  # version 1, the teaching kernels
VERSIONS = {"v1": kernels}
if (ROOT / "kernels" / "bptt_v2.py").is_file():  # version 2 beside it, in this kit
    VERSIONS["v2"] = _load("bptt_v2")


@pytest.fixture(params=list(VERSIONS.values()), ids=list(VERSIONS))
def version(request):
    """The module whose host functions a test calls: each version in turn."""
    return request.param


def problem(seed, T, N, D, H):
    rng = np.random.default_rng(seed)
    x, h0 = rng.standard_normal((T, N, D)), 0.5 * rng.standard_normal((N, H))
    W_xh, W_hh = rng.standard_normal((D, H)) / np.sqrt(D), 0.4 * rng.standard_normal((H, H))
    b, dhs = 0.3 * rng.standard_normal(H), rng.standard_normal((T, N, H))
    return x, h0, W_xh, W_hh, b, dhs


@pytest.mark.parametrize("seed, T, N, D, H, k", [
    (0, 1, 1, 1, 1, 1),    # one step, one unit
    (1, 5, 2, 3, 4, 5),    # full BPTT, D < H
    (2, 6, 3, 5, 2, 2),    # chunks of 2, D > H
    (3, 7, 2, 4, 3, 3),    # T not a multiple of k
])
def test_forward_and_backward_match_the_reference(version, seed, T, N, D, H, k):
    x, h0, W_xh, W_hh, b, dhs = problem(seed, T, N, D, H)
    hs = ref.rnn_forward(x, h0, W_xh, W_hh, b)
    np.testing.assert_allclose(version.rnn_forward(x, h0, W_xh, W_hh, b), hs, rtol=1e-12, atol=1e-12)
    got = version.rnn_backward(dhs, x, h0, hs, W_xh, W_hh, k)
    for g, w in zip(got, ref.rnn_backward(dhs, x, h0, hs, W_xh, W_hh, k)):
        np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-12)


def test_backward_is_deterministic(version):
    x, h0, W_xh, W_hh, b, dhs = problem(4, 5, 2, 3, 3)
    hs = ref.rnn_forward(x, h0, W_xh, W_hh, b)
    first = version.rnn_backward(dhs, x, h0, hs, W_xh, W_hh, 2)
    again = version.rnn_backward(dhs, x, h0, hs, W_xh, W_hh, 2)
    assert all(np.array_equal(a, c) for a, c in zip(first, again)), "no atomics: same bits every run"


@pytest.mark.parametrize("max_norm", [2.0, 7.0, 9.0])
def test_clipping_matches_the_reference_above_at_and_below_the_threshold(version, max_norm):
    grads = [np.array([2.0, 3.0]), np.array([[6.0]]), np.zeros((2, 2))]  # global norm 7
    got, total = version.clip_grad_norm(grads, max_norm)
    want, want_total = ref.clip_grad_norm(grads, max_norm)
    assert np.isclose(total, want_total)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_float32_stays_float32_and_close(version):
    x, h0, W_xh, W_hh, b, dhs = problem(5, 4, 2, 3, 3)
    hs32 = version.rnn_forward(x.astype(np.float32), h0, W_xh, W_hh, b)
    assert hs32.dtype == np.float32
    np.testing.assert_allclose(hs32, ref.rnn_forward(x, h0, W_xh, W_hh, b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("seed", [10, 11])
def test_random_shapes_in_both_dtypes(version, seed, dtype):
    """T, N, D, H and the truncation drawn at random; clipping of random tensors too."""
    rng = np.random.default_rng(seed)
    T, N, D, H = (int(v) for v in rng.integers(1, 7, size=4))
    chunk = int(rng.integers(1, T + 1))
    x, h0, W_xh, W_hh, b, dhs = (a.astype(dtype) for a in problem(seed, T, N, D, H))
    hs = ref.rnn_forward(*(a.astype(np.float64) for a in (x, h0, W_xh, W_hh, b)))
    tol = {"rtol": 1e-11, "atol": 1e-12} if dtype == np.float64 else {"rtol": 1e-4, "atol": 1e-5}
    got_hs = version.rnn_forward(x, h0, W_xh, W_hh, b)
    assert got_hs.dtype == dtype
    np.testing.assert_allclose(got_hs, hs, **tol)
    got = version.rnn_backward(dhs, x, h0, hs.astype(dtype), W_xh, W_hh, chunk)
    want = ref.rnn_backward(*(a.astype(np.float64) for a in (dhs, x, h0)), hs, W_xh.astype(np.float64),
                            W_hh.astype(np.float64), chunk)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, **tol)
    grads = [rng.standard_normal(tuple(int(d) for d in rng.integers(1, 30, size=2))).astype(dtype) for _ in range(3)]
    max_norm = float(rng.uniform(0.5, 2.0)) * float(np.sqrt(sum((g.astype(np.float64) ** 2).sum() for g in grads)))
    clipped, total = version.clip_grad_norm(grads, max_norm)
    want_clipped, want_total = ref.clip_grad_norm([g.astype(np.float64) for g in grads], max_norm)
    np.testing.assert_allclose(total, want_total, rtol=tol["rtol"])
    for g, w in zip(clipped, want_clipped):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, w, **tol)
