"""The BPTT kernels against the solution notebook's reference, under the simulator.

Loaded by path, so the same file works in this kit and in an instructor's own folder.
Shapes stay small (a launch simulates one or two 16 x 16 blocks); D and H differ, so the
backward's threads past D or past H must still write what they own.
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
ref = load_solution("bptt", ROOT)
_spec = importlib.util.spec_from_file_location("kernels_bptt", ROOT / "kernels" / "bptt.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)


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
def test_forward_and_backward_match_the_reference(seed, T, N, D, H, k):
    x, h0, W_xh, W_hh, b, dhs = problem(seed, T, N, D, H)
    hs = ref.rnn_forward(x, h0, W_xh, W_hh, b)
    np.testing.assert_allclose(kernels.rnn_forward(x, h0, W_xh, W_hh, b), hs, rtol=1e-12, atol=1e-12)
    got = kernels.rnn_backward(dhs, x, h0, hs, W_xh, W_hh, k)
    for g, w in zip(got, ref.rnn_backward(dhs, x, h0, hs, W_xh, W_hh, k)):
        np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-12)


def test_backward_is_deterministic():
    x, h0, W_xh, W_hh, b, dhs = problem(4, 5, 2, 3, 3)
    hs = ref.rnn_forward(x, h0, W_xh, W_hh, b)
    first = kernels.rnn_backward(dhs, x, h0, hs, W_xh, W_hh, 2)
    again = kernels.rnn_backward(dhs, x, h0, hs, W_xh, W_hh, 2)
    assert all(np.array_equal(a, c) for a, c in zip(first, again)), "no atomics: same bits every run"


@pytest.mark.parametrize("max_norm", [2.0, 7.0, 9.0])
def test_clipping_matches_the_reference_above_at_and_below_the_threshold(max_norm):
    grads = [np.array([2.0, 3.0]), np.array([[6.0]]), np.zeros((2, 2))]  # global norm 7
    got, total = kernels.clip_grad_norm(grads, max_norm)
    want, want_total = ref.clip_grad_norm(grads, max_norm)
    assert np.isclose(total, want_total)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_float32_stays_float32_and_close():
    x, h0, W_xh, W_hh, b, dhs = problem(5, 4, 2, 3, 3)
    hs32 = kernels.rnn_forward(x.astype(np.float32), h0, W_xh, W_hh, b)
    assert hs32.dtype == np.float32
    np.testing.assert_allclose(hs32, ref.rnn_forward(x, h0, W_xh, W_hh, b), rtol=1e-5, atol=1e-6)
