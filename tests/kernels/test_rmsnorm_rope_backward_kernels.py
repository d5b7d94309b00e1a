"""The RMSNorm and RoPE kernels against the solution notebook's reference, under the simulator.

Loaded by path, so the same file works in this kit and in an instructor's own folder. Shapes
stay small and blocks are 32 or 64 threads, so a launch simulates a few hundred threads; G
(the RMSNorm backward's blocks) below N gives blocks several rows.
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
ref = load_solution("rmsnorm_rope_backward", ROOT)
_spec = importlib.util.spec_from_file_location("kernels_rmsnorm_rope_backward",
                                               ROOT / "kernels" / "rmsnorm_rope_backward.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)


def problem(seed, n, d):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, 3, size=(n, 1)) + rng.uniform(0.5, 2, size=(n, 1)) * rng.standard_normal((n, d))
    return x, rng.standard_normal(d), rng.standard_normal((n, d)), rng.integers(0, 4096, size=n)


@pytest.mark.parametrize("seed, n, d, tpb, blocks", [
    (0, 1, 1, 32, None),   # D = 1
    (1, 3, 5, 32, None),   # D < TPB: most threads add nothing
    (2, 2, 33, 32, None),  # one column past a full block
    (3, 5, 70, 64, 2),     # several columns per thread, several rows per backward block
])
def test_rmsnorm_matches_the_reference(seed, n, d, tpb, blocks):
    x, gamma, dy, _ = problem(seed, n, d)
    for eps in (0.0, 1e-5):
        y, rstd = kernels.rmsnorm_forward(x, gamma, eps, threads_per_block=tpb)
        want_y, want_rstd = ref.rmsnorm_forward(x, gamma, eps)
        np.testing.assert_allclose(rstd, want_rstd, rtol=1e-12)
        np.testing.assert_allclose(y, want_y, rtol=1e-11, atol=1e-12)
        got = kernels.rmsnorm_backward(dy, x, gamma, want_rstd, threads_per_block=tpb, blocks=blocks)
        for g, w in zip(got, ref.rmsnorm_backward(dy, x, gamma, want_rstd)):
            np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-12)


def test_rmsnorm_backward_has_no_mean_term_and_is_deterministic():
    x, gamma, dy, _ = problem(4, 6, 40)
    _, rstd = ref.rmsnorm_forward(x, gamma, 0.0)
    first = kernels.rmsnorm_backward(dy, x, gamma, rstd, threads_per_block=32, blocks=2)
    again = kernels.rmsnorm_backward(dy, x, gamma, rstd, threads_per_block=32, blocks=2)
    assert all(np.array_equal(a, b) for a, b in zip(first, again)), "no atomics: same bits every run"
    assert np.allclose((first[0] * x).sum(axis=1), 0.0, atol=1e-11)  # eps = 0: orthogonal to x
    assert not np.allclose(first[0].sum(axis=1), 0.0)  # and, with no mean, rows do not sum to 0


@pytest.mark.parametrize("seed, n, d, base", [(5, 1, 2, 10000.0), (6, 4, 6, 10.0), (7, 3, 64, 10000.0)])
def test_rope_forward_and_backward_match_the_reference(seed, n, d, base):
    x, _, dy, pos = problem(seed, n, d)
    np.testing.assert_allclose(kernels.rope_forward(x, pos, base), ref.rope_forward(x, pos, base),
                               rtol=1e-11, atol=1e-11)
    dx = kernels.rope_backward(dy, pos, base)
    np.testing.assert_allclose(dx, ref.rope_backward(dy, pos, base), rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(kernels.rope_forward(dx, pos, base), dy, atol=1e-11)  # back, then forward


def test_rope_takes_repeated_and_negative_positions():
    """Rows at the same position share a line of the tables; -pos (the reference's backward) works."""
    _, _, dy, _ = problem(9, 5, 8)
    pos = np.array([3, -3, 3, 0, -100])
    np.testing.assert_allclose(kernels.rope_forward(dy, pos, 10.0), ref.rope_forward(dy, pos, 10.0), atol=1e-12)
    np.testing.assert_allclose(kernels.rope_backward(dy, pos, 10.0), ref.rope_forward(dy, -pos, 10.0), atol=1e-12)


def test_float32_math_stays_float32_and_close():
    x, gamma, dy, pos = problem(8, 4, 48)
    x32, gamma32, dy32 = (a.astype(np.float32) for a in (x, gamma, dy))
    y, rstd = kernels.rmsnorm_forward(x32, gamma32, 1e-5, threads_per_block=32)
    assert y.dtype == np.float32 and rstd.dtype == np.float32
    np.testing.assert_allclose(y, ref.rmsnorm_forward(x, gamma, 1e-5)[0], rtol=1e-4, atol=1e-5)
    dx, dgamma = kernels.rmsnorm_backward(dy32, x32, gamma32, rstd, threads_per_block=32)
    want = ref.rmsnorm_backward(dy, x, gamma, ref.rmsnorm_forward(x, gamma, 1e-5)[1])
    assert dx.dtype == np.float32 and dgamma.dtype == np.float32
    np.testing.assert_allclose(dx, want[0], rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(dgamma, want[1], rtol=1e-3, atol=1e-4)
    got = kernels.rope_backward(dy32, pos, 10000.0)  # positions up to 4096: the table's angles are exact
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref.rope_backward(dy, pos, 10000.0), rtol=1e-4, atol=1e-5)
