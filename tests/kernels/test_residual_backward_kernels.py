"""The residual_backward kernels against the solution notebook's reference, under the simulator
(and the race checker, tests/conftest.py), with the launch limits of a real GPU.

Loaded by path, so the same file works in this kit and in an instructor's own folder. Shapes
stay small (a launch simulates one or two blocks of 128 threads); D and H differ, so a thread
past one of them must not write what another owns.
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
ref = load_solution("residual_backward", ROOT)
_spec = importlib.util.spec_from_file_location("kernels_residual_backward", ROOT / "kernels" / "residual_backward.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)


def problem(seed, L, N, D, H):
    rng = np.random.default_rng(seed)
    x, dout = rng.standard_normal((N, D)), rng.standard_normal((N, D))
    weights = [(rng.standard_normal((D, H)) * np.sqrt(2 / D), rng.standard_normal((H, D)) * 0.5 / np.sqrt(H))
               for _ in range(L)]
    return x, dout, weights


@pytest.mark.parametrize("seed, L, N, D, H, skip", [
    (0, 1, 1, 1, 1, True),    # one block, one unit
    (1, 3, 2, 3, 5, True),    # D < H
    (2, 2, 3, 5, 2, False),   # D > H, no skip
    (3, 0, 2, 3, 4, True),    # no block at all: hs = [x], dhs = [dout]
])
def test_forward_and_backward_match_the_reference(seed, L, N, D, H, skip):
    x, dout, weights = problem(seed, L, N, D, H)
    hs = ref.residual_forward(x, weights, skip)
    np.testing.assert_allclose(kernels.residual_forward(x, weights, skip), hs, rtol=1e-12, atol=1e-12)
    dhs, grads = kernels.residual_backward(dout, hs, weights, skip)
    want_dhs, want_grads = ref.residual_backward(dout, hs, weights, skip)
    np.testing.assert_allclose(dhs, want_dhs, rtol=1e-11, atol=1e-12)
    for (g1, g2), (w1, w2) in zip(grads, want_grads):
        np.testing.assert_allclose(g1, w1, rtol=1e-11, atol=1e-12)
        np.testing.assert_allclose(g2, w2, rtol=1e-11, atol=1e-12)


def test_the_relu_passes_nothing_at_exactly_zero():
    x = np.array([[1.0, -1.0], [0.0, 2.0]])
    weights = [(np.array([[1.0, 1.0], [1.0, 0.0]]), np.eye(2))]  # row 0: z = [0, 1]
    hs = ref.residual_forward(x, weights, True)
    dout = np.array([[1.0, 2.0], [3.0, -1.0]])
    np.testing.assert_allclose(kernels.residual_backward(dout, hs, weights, True)[0],
                               ref.residual_backward(dout, hs, weights, True)[0], rtol=1e-12)


def test_gradient_norms_match_the_reference_and_run_in_a_fixed_order():
    x, dout, weights = problem(4, 4, 3, 4, 3)
    got = kernels.gradient_norms(dout, x, weights)
    for g, w in zip(got, ref.gradient_norms(dout, x, weights)):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    again = kernels.gradient_norms(dout, x, weights)
    assert all(np.array_equal(a, b) for a, b in zip(got, again)), "no atomics: the same bits every run"


def test_a_layer_larger_than_one_block_of_threads_is_summed_whole():
    dhs = np.random.default_rng(5).standard_normal((3, 7, 41))  # 287 entries a layer > 128 threads
    np.testing.assert_allclose(kernels.layer_norms(dhs), np.linalg.norm(dhs.reshape(3, -1), axis=1), rtol=1e-12)


def test_float32_stays_float32_and_close():
    x, dout, weights = problem(6, 2, 2, 3, 4)
    hs32 = kernels.residual_forward(x.astype(np.float32), weights, True)
    assert hs32.dtype == np.float32
    np.testing.assert_allclose(hs32, ref.residual_forward(x, weights, True), rtol=1e-5, atol=1e-6)
    dhs32, _ = kernels.residual_backward(dout.astype(np.float32), hs32, weights, True)
    assert dhs32.dtype == np.float32


def test_the_launches_fit_a_gpu_at_the_benchmarks_large_and_huge_sizes():
    """Every launcher at LARGE and at the HUGE shapes that fill an 80 GB GPU (kernels/cases/
    residual_backward.py), dry-run (kernels/dry_run.py): stand-ins with no memory, launches
    recorded and held to CUDA's limits, nothing run. 1-D grids: x under 2^31 - 1."""
    from backprop_traps.kernels.cases import residual_backward as sizes
    from backprop_traps.kernels.dry_run import ShapeOnly, dry_run
    for L, N, D, H in (sizes.LARGE, *sizes.HUGE):
        a = lambda *shape: ShapeOnly(shape, np.float32)  # noqa: E731
        with dry_run() as run:
            kernels.block_forward_device(a(N, D), a(D, H), a(H, D), True, a(N, H), a(N, D))
            kernels.block_backward_device(a(N, D), a(N, D), a(N, H), a(D, H), a(H, D), True,
                                          a(N, H), a(N, D), a(D, H), a(H, D))
            kernels.layer_sum_squares_device(a(L + 1, N, D), a(L + 1))
        assert len(run.launches) == 7 and not run.refused, run.refused
        assert max(launch.grid[0] for launch in run.launches) >= N * D // kernels.THREADS  # one thread per entry
