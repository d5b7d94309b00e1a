"""The moe_router_backward kernels against the solution notebook's reference, under the simulator.

Loaded by path, so the same file works in this kit and in an instructor's own folder. Shapes
stay tiny (the simulator runs every CUDA thread as a Python thread): k = 1, 2 and E, tie-free
logits, and small integers whose logits tie at the selection's edge (the lower index first).
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
ref = load_solution("moe_router_backward", ROOT)
_spec = importlib.util.spec_from_file_location("kernels_moe_router_backward", ROOT / "kernels" / "moe_router_backward.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)

SHAPES = [(0, 1, 3, 4, 1), (1, 5, 3, 6, 2), (2, 7, 4, 5, 5)]  # seed, N, D, E, k


def draw(seed, N, D, E, tied):
    rng = np.random.default_rng(seed)
    if tied:
        return (rng.integers(-2, 3, size=(N, D)).astype(np.float64),
                rng.integers(-1, 2, size=(D, E)).astype(np.float64), rng)
    return rng.standard_normal((N, D)), rng.standard_normal((D, E)), rng


@pytest.mark.parametrize("tied", [False, True])
@pytest.mark.parametrize("seed, N, D, E, k", SHAPES)
def test_forward_matches_the_reference(seed, N, D, E, k, tied):
    x, Wr, _ = draw(seed, N, D, E, tied)
    gates, idx, aux = kernels.router_forward(x, Wr, k, 0.3)
    want_gates, want_idx, want_aux = ref.router_forward(x, Wr, k, 0.3)
    np.testing.assert_array_equal(idx, want_idx)
    assert idx.dtype == np.int64
    np.testing.assert_allclose(gates, want_gates, rtol=1e-12, atol=1e-14)
    assert abs(aux - want_aux) <= 1e-12 * max(1.0, abs(want_aux))


@pytest.mark.parametrize("tied", [False, True])
@pytest.mark.parametrize("seed, N, D, E, k", SHAPES)
def test_backward_matches_the_reference(seed, N, D, E, k, tied):
    x, Wr, rng = draw(seed, N, D, E, tied)
    idx = ref.router_forward(x, Wr, k, 0.3)[1]
    dgates = rng.standard_normal((N, k))
    for aux_coef in (0.0, 0.3):
        dx, dWr = kernels.router_backward(dgates, x, Wr, idx, aux_coef)
        want_dx, want_dWr = ref.router_backward(dgates, x, Wr, idx, aux_coef)
        np.testing.assert_allclose(dx, want_dx, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(dWr, want_dWr, rtol=1e-10, atol=1e-12)


def test_the_gates_send_nothing_to_unselected_experts():
    """Without the balancing loss, a token's row of dlogits is zero off its k experts."""
    x, Wr, rng = draw(4, 6, 3, 7, False)
    idx = ref.router_forward(x, Wr, 2, 0.0)[1]
    dx, dWr = kernels.router_backward(rng.standard_normal((6, 2)), x, Wr, idx, 0.0)
    unused = np.setdiff1d(np.arange(7), idx.ravel())
    assert np.all(dWr[:, unused] == 0)


def test_more_tokens_than_a_block_of_threads():
    """130 tokens: two blocks of 128 threads, the second with 2 tokens."""
    x, Wr, rng = draw(3, 130, 3, 8, False)
    gates, idx, aux = kernels.router_forward(x, Wr, 3, 0.3)
    want_gates, want_idx, want_aux = ref.router_forward(x, Wr, 3, 0.3)
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_allclose(gates, want_gates, rtol=1e-12, atol=1e-14)
    dgates = rng.standard_normal((130, 3))
    dx, dWr = kernels.router_backward(dgates, x, Wr, idx, 0.3)
    want_dx, want_dWr = ref.router_backward(dgates, x, Wr, idx, 0.3)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dWr, want_dWr, rtol=1e-10, atol=1e-12)


def test_float32_stays_float32_and_close():
    x, Wr, rng = draw(5, 6, 4, 5, False)
    gates, idx, _ = kernels.router_forward(x.astype(np.float32), Wr.astype(np.float32), 2, 0.3)
    assert gates.dtype == np.float32
    np.testing.assert_array_equal(idx, ref.router_forward(x, Wr, 2, 0.3)[1])
    np.testing.assert_allclose(gates, ref.router_forward(x, Wr, 2, 0.3)[0], rtol=1e-5, atol=1e-6)


def test_launches_stay_within_cuda_limits_at_the_benchmarks_sizes():
    """The forward and the backward at TINY, LARGE and the HUGE shape that fills an 80 GB GPU
    (kernels/cases/moe_router_backward.py), dry-run (kernels/runtime/dry_run.py): nothing allocated or run."""
    from backprop_traps.kernels.cases import moe_router_backward as sizes
    from backprop_traps.kernels.runtime.dry_run import ShapeOnly, dry_run
    for N, D, E, k in (sizes.TINY, sizes.LARGE, *sizes.HUGE):
        a = lambda *shape, dtype=np.float32: ShapeOnly(shape, dtype)  # noqa: E731
        with dry_run() as run:
            kernels.router_forward_device(a(N, D), a(D, E), k, a(N, E), a(N, k), a(N, k, dtype=np.int64),
                                          a(N, E), a(E), a(E))
            kernels.router_backward_device(a(N, k), a(N, D), a(D, E), a(N, k, dtype=np.int64), 0.01, a(N, E),
                                           a(E), a(N, E), a(N, D), a(D, E))
        assert len(run.launches) >= 8 and not run.refused, run.refused
