"""The batched JVP / VJP kernels against the solution notebook's reference, both versions
(kernels/forward_vs_reverse.py, one thread an output; kernels/forward_vs_reverse_v2.py, tiled).

Runs under the Numba CUDA simulator (tests/conftest.py), or on a GPU with
BACKPROP_TRAPS_REAL_GPU=1. Widths stay small: every launch is one or two blocks of 256
simulated threads. Loaded by path, so the file works in an instructor's own folder too.
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
ref = load_solution("forward_vs_reverse", ROOT)
_spec = importlib.util.spec_from_file_location("kernels_forward_vs_reverse", ROOT / "kernels" / "forward_vs_reverse.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)
VERSIONS = pytest.mark.parametrize("version", [1, 2], ids=["v1", "v2"])

WIDTHS = [
    [3, 4],               # one layer
    [5, 5, 5, 5],         # square: the wrong order would show here
    [6, 9, 1, 7, 4],      # non-square, with a width-1 bottleneck
    [20, 3, 18],          # a bottleneck between wider layers
    [1, 6, 2],            # a single input
]


def chain(rng, dims, dtype=np.float64):
    return [rng.standard_normal((dims[i + 1], dims[i])).astype(dtype) for i in range(len(dims) - 1)]


@VERSIONS
@pytest.mark.parametrize("seed, dims", list(enumerate(WIDTHS)))
def test_jvp_and_vjp_match_the_reference(seed, dims, version):
    rng = np.random.default_rng(seed)
    As = chain(rng, dims)
    v, u = rng.standard_normal(dims[0]), rng.standard_normal(dims[-1])
    np.testing.assert_allclose(kernels.chain_jvp(As, v, version), ref.chain_jvp(As, v), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(kernels.chain_vjp(As, u, version), ref.chain_vjp(As, u), rtol=1e-12, atol=1e-12)


@VERSIONS
@pytest.mark.parametrize("seed, dims", list(enumerate(WIDTHS)))
def test_batched_jacobians_match_the_reference(seed, dims, version):
    As = chain(np.random.default_rng(10 + seed), dims)
    expected = ref.jacobian_reverse(As)
    np.testing.assert_allclose(kernels.jacobian_forward(As, version), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(kernels.jacobian_reverse(As, version), expected, rtol=1e-12, atol=1e-12)


@VERSIONS
def test_float32_stays_float32(version):
    rng = np.random.default_rng(7)
    As = chain(rng, [6, 9, 1, 7, 4], np.float32)
    v = rng.standard_normal(6).astype(np.float32)
    jv, J = kernels.chain_jvp(As, v, version), kernels.jacobian_reverse(As, version)
    assert jv.dtype == J.dtype == np.float32
    As64 = [A.astype(np.float64) for A in As]
    np.testing.assert_allclose(jv, ref.chain_jvp(As64, v.astype(np.float64)), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(J, ref.jacobian_forward(As64), rtol=1e-4, atol=1e-5)


@VERSIONS
def test_inputs_are_left_unchanged(version):
    rng = np.random.default_rng(8)
    As = chain(rng, [4, 5, 3])
    before = [A.copy() for A in As]
    u = rng.standard_normal(3)
    u_before = u.copy()
    kernels.chain_vjp(As, u, version)
    kernels.jacobian_forward(As, version)
    assert all(np.array_equal(A, B) for A, B in zip(As, before)) and np.array_equal(u, u_before)


@pytest.mark.parametrize("M, K, N", [(70, 17, 2), (2, 3, 70), (3, 140, 2)],
                         ids=["rows-past-a-tile", "columns-past-a-tile", "shared-axis-split"])
def test_the_tiled_product_past_one_tile(M, K, N):
    """More than one 64 x 64 output tile, a shared axis past one 16-step, and one split over
    blocks (split-K: one tile and 140 along the shared axis, kernels/common/tiled_matmul.py)."""
    from backprop_traps.kernels.common import tiled_matmul
    assert (tiled_matmul.splits(M, N, K) > 1) == (K == 140)
    rng = np.random.default_rng(20)
    A, B = rng.standard_normal((M, K)), rng.standard_normal((K, N))
    from backprop_traps.kernels import forward_vs_reverse_v2 as v2
    d_out = kernels.cuda.device_array((M, N))
    v2.jvp_step_device(kernels.cuda.to_device(A), kernels.cuda.to_device(B), d_out)
    np.testing.assert_allclose(d_out.copy_to_host(), A @ B, rtol=1e-12, atol=1e-12)
