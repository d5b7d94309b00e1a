"""The residual_backward kernels against the solution notebook's reference, under the simulator
(and the race checker, tests/conftest.py), with the launch limits of a real GPU.

Loaded by path, so the same file works in this kit and in an instructor's own folder. Shapes
stay small (a launch simulates one or two blocks of 128 threads, or one 64 x 64 tile of 256
for version 2); D and H differ, so a thread past one of them must not write what another owns.
Every check runs version 1 and version 2 (kernels/residual_backward_v2.py: tiled products,
the norms in two stages).
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


VERSIONS = pytest.mark.parametrize("version", [1, 2])


@VERSIONS
@pytest.mark.parametrize("seed, L, N, D, H, skip", [
    (0, 1, 1, 1, 1, True),    # one block, one unit
    (1, 3, 2, 3, 5, True),    # D < H
    (2, 2, 3, 5, 2, False),   # D > H, no skip
    (3, 0, 2, 3, 4, True),    # no block at all: hs = [x], dhs = [dout]
])
def test_forward_and_backward_match_the_reference(seed, L, N, D, H, skip, version):
    x, dout, weights = problem(seed, L, N, D, H)
    hs = ref.residual_forward(x, weights, skip)
    np.testing.assert_allclose(kernels.residual_forward(x, weights, skip, version), hs, rtol=1e-12, atol=1e-12)
    dhs, grads = kernels.residual_backward(dout, hs, weights, skip, version)
    want_dhs, want_grads = ref.residual_backward(dout, hs, weights, skip)
    np.testing.assert_allclose(dhs, want_dhs, rtol=1e-11, atol=1e-12)
    for (g1, g2), (w1, w2) in zip(grads, want_grads):
        np.testing.assert_allclose(g1, w1, rtol=1e-11, atol=1e-12)
        np.testing.assert_allclose(g2, w2, rtol=1e-11, atol=1e-12)


@VERSIONS
def test_the_relu_passes_nothing_at_exactly_zero(version):
    x = np.array([[1.0, -1.0], [0.0, 2.0]])
    weights = [(np.array([[1.0, 1.0], [1.0, 0.0]]), np.eye(2))]  # row 0: z = [0, 1]
    hs = ref.residual_forward(x, weights, True)
    dout = np.array([[1.0, 2.0], [3.0, -1.0]])
    np.testing.assert_allclose(kernels.residual_backward(dout, hs, weights, True, version)[0],
                               ref.residual_backward(dout, hs, weights, True)[0], rtol=1e-12)


@VERSIONS
def test_gradient_norms_match_the_reference_and_run_in_a_fixed_order(version):
    x, dout, weights = problem(4, 2, 3, 4, 3)  # two blocks: the order of two layers, each run twice
    got = kernels.gradient_norms(dout, x, weights, version)
    for g, w in zip(got, ref.gradient_norms(dout, x, weights)):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    again = kernels.gradient_norms(dout, x, weights, version)
    assert all(np.array_equal(a, b) for a, b in zip(got, again)), "no atomics: the same bits every run"


@VERSIONS
def test_a_layer_larger_than_one_block_of_threads_is_summed_whole(version):
    dhs = np.random.default_rng(5).standard_normal((3, 7, 41))  # 287 entries a layer > 128 threads; v2: layers 1
    np.testing.assert_allclose(kernels.layer_norms(dhs, version),  # and 2 start off a 16-byte boundary
                               np.linalg.norm(dhs.reshape(3, -1), axis=1), rtol=1e-12)


def test_version_2_norms_split_a_layer_over_blocks_and_add_them_in_order():
    from backprop_traps.kernels import residual_backward_v2 as v2
    from backprop_traps.kernels.runtime.device import cuda
    dhs = np.random.default_rng(7).standard_normal((2, 1101)).astype(np.float32)  # G = 2 blocks a layer
    sums, parts = cuda.device_array(2, np.float32), cuda.device_array((2, 2), np.float32)
    v2.layer_sum_squares_device(cuda.to_device(dhs), sums, parts)
    np.testing.assert_allclose(sums.copy_to_host(), np.sum(dhs.astype(np.float64) ** 2, axis=1), rtol=1e-5)
    assert np.all(parts.copy_to_host() > 0), "both blocks of each layer had entries to add"


def test_version_2_norms_refuse_an_array_off_a_16_byte_boundary():
    from backprop_traps.kernels import residual_backward_v2 as v2
    from backprop_traps.kernels.runtime.device import cuda
    view = cuda.to_device(np.zeros(13))[1:].reshape(3, 4)  # starts 8 bytes past a boundary
    with pytest.raises(ValueError, match="16-byte boundary"):
        v2.layer_sum_squares_device(view, cuda.device_array(3))


def test_version_2_weight_gradient_splits_the_rows_and_adds_the_parts():
    """dW = A^T B over 130 rows and one output tile: split-K in two (kernels/common/tiled_matmul.py)."""
    from backprop_traps.kernels import residual_backward_v2 as v2
    from backprop_traps.kernels.common import tiled_matmul
    from backprop_traps.kernels.runtime.device import cuda
    rng = np.random.default_rng(8)
    A, B = rng.standard_normal((130, 3)), rng.standard_normal((130, 5))
    assert tiled_matmul.splits(3, 5, 130) == 2
    dW = cuda.device_array((3, 5))
    v2.weight_grad_device(cuda.to_device(A), cuda.to_device(B), dW)
    np.testing.assert_allclose(dW.copy_to_host(), A.T @ B, rtol=1e-12, atol=1e-12)


@VERSIONS
def test_float32_stays_float32_and_close(version):
    x, dout, weights = problem(6, 2, 2, 3, 4)
    hs32 = kernels.residual_forward(x.astype(np.float32), weights, True, version)
    assert hs32.dtype == np.float32
    np.testing.assert_allclose(hs32, ref.residual_forward(x, weights, True), rtol=1e-5, atol=1e-6)
    dhs32, _ = kernels.residual_backward(dout.astype(np.float32), hs32, weights, True, version)
    assert dhs32.dtype == np.float32


def test_the_launches_fit_a_gpu_at_the_benchmarks_large_and_huge_sizes():
    """Every launcher at LARGE and at the HUGE shapes that fill an 80 GB GPU (kernels/cases/
    residual_backward.py), dry-run (kernels/runtime/dry_run.py): stand-ins with no memory, launches
    recorded and held to CUDA's limits, nothing run. 1-D grids: x under 2^31 - 1."""
    from backprop_traps.kernels.cases import residual_backward as sizes
    from backprop_traps.kernels.runtime.dry_run import ShapeOnly, dry_run
    for L, N, D, H in (sizes.LARGE, *sizes.HUGE):
        a = lambda *shape: ShapeOnly(shape, np.float32)  # noqa: E731
        with dry_run() as run:
            kernels.block_forward_device(a(N, D), a(D, H), a(H, D), True, a(N, H), a(N, D))
            kernels.block_backward_device(a(N, D), a(N, D), a(N, H), a(D, H), a(H, D), True,
                                          a(N, H), a(N, D), a(D, H), a(H, D))
            kernels.layer_sum_squares_device(a(L + 1, N, D), a(L + 1))
        assert len(run.launches) == 7 and not run.refused, run.refused
        assert max(launch.grid[0] for launch in run.launches) >= N * D // kernels.THREADS  # one thread per entry


def test_version_2_launches_fit_a_gpu_at_the_benchmarks_large_and_huge_sizes():
    """Version 2's launchers at the same sizes: 2-D grids of 64 x 64 tiles (row tiles past 65,535
    strided), split-K along z, the norms' layers along y."""
    from backprop_traps.kernels import residual_backward_v2 as v2
    from backprop_traps.kernels.cases import residual_backward as sizes
    from backprop_traps.kernels.runtime.dry_run import ShapeOnly, dry_run
    for L, N, D, H in (sizes.LARGE, *sizes.HUGE):
        a = lambda *shape: ShapeOnly(shape, np.float32)  # noqa: E731
        with dry_run() as run:
            v2.block_forward_device(a(N, D), a(D, H), a(H, D), True, a(N, H), a(N, D))
            v2.block_backward_device(a(N, D), a(N, D), a(N, H), a(D, H), a(H, D), True,
                                     a(N, H), a(N, D), a(D, H), a(H, D))
            v2.layer_sum_squares_device(a(L + 1, N, D), a(L + 1))
        assert 8 <= len(run.launches) <= 10 and not run.refused, run.refused  # + a sum of the splits each
        norms = next(launch for launch in run.launches if launch.kernel.endswith("layer_partials_kernel"))
        assert norms.grid[0] * norms.grid[1] * v2.NORM_THREADS >= 2 ** 19, norms.grid  # half a million threads
