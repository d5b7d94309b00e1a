"""The gradient-accumulation kernels against the solution notebook's reference, under the simulator.

Loaded by path, so the same file works in this kit and in an instructor's own folder. Shapes stay
small and blocks have 16 or 32 threads: the accumulation launches (D_in + 1) * D_out blocks per
layer and micro-batch, each simulated thread a Python thread. 15 to 25 s under the simulator
on the shared 2-core reference machine (about 10 s of CPU).
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
ref = load_solution("grad_accumulation", ROOT)
_spec = importlib.util.spec_from_file_location("kernels_grad_accumulation", ROOT / "kernels" / "grad_accumulation.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)


def problem(seed, n, d_in, hidden, d_out):
    rng = np.random.default_rng(seed)
    params = (rng.standard_normal((d_in, hidden)) / np.sqrt(d_in), 0.3 * rng.standard_normal(hidden),
              rng.standard_normal((hidden, d_out)) / np.sqrt(hidden), 0.3 * rng.standard_normal(d_out))
    return params, rng.standard_normal((n, d_in)), rng.standard_normal((n, d_out))


def assert_grads(got, expected, rtol=1e-12, atol=1e-13):
    assert len(got) == 4
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == np.float64
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


@pytest.mark.parametrize("seed, n, d_in, hidden, d_out, micro_batch, fused, tpb", [
    (0, 7, 3, 5, 2, 3, True, 16),    # an uneven last micro-batch of 1 row
    (1, 8, 2, 4, 3, 4, True, 32),    # two equal micro-batches, 32-thread blocks
    (2, 3, 3, 3, 2, 1, True, 16),    # every row its own micro-batch
    (3, 6, 2, 5, 2, 9, True, 16),    # micro_batch > N: one micro-batch
    (4, 1, 3, 4, 2, 1, True, 16),    # N = 1
    (5, 9, 3, 4, 2, 4, False, 16),   # the unfused way: scratch gradient, then buffer += it
    (6, 40, 2, 3, 2, 40, True, 16),  # more rows than threads: each thread sums several
])
def test_matches_the_solution(seed, n, d_in, hidden, d_out, micro_batch, fused, tpb):
    params, x, y = problem(seed, n, d_in, hidden, d_out)
    got = kernels.accumulated_grads(params, x, y, micro_batch, fused=fused, threads_per_block=tpb)
    assert_grads(got, ref.accumulated_grads(params, x, y, micro_batch))
    assert_grads(got, ref.mlp_grads(params, x, y))


def test_one_micro_batch_is_mlp_grads():
    params, x, y = problem(7, 5, 3, 4, 2)
    assert_grads(kernels.mlp_grads(params, x, y, threads_per_block=16), ref.mlp_grads(params, x, y))


def test_adds_into_the_buffer_in_place():
    """A buffer that already holds the first micro-batches' share ends with the whole batch's."""
    from numba import cuda
    params, x, y = problem(8, 7, 2, 3, 2)
    head = ref.accumulated_grads(params, x[:4], y[:4], 4)             # the mean over rows 0..3
    start = [4 / 7 * g for g in head]                                 # their share of the 7 rows
    d_buffers = [cuda.to_device(b) for b in start]
    d_params = [cuda.to_device(p) for p in params]
    ws = kernels.workspace(4, params, x.dtype)
    kernels.accumulate_micro_batch_dev(d_params, cuda.to_device(x[4:]), cuda.to_device(y[4:]), d_buffers,
                                       1 / 7, ws, threads_per_block=16)
    assert_grads([d.copy_to_host() for d in d_buffers], ref.mlp_grads(params, x, y))


def test_a_float32_buffer_loses_what_a_float64_buffer_keeps():
    """Micro-batches whose gradients (about 1e4) cancel to about 1, accumulated from the same
    float64 micro-batches: a float64 buffer gets the sum to 1e-12, a float32 one does not."""
    rng = np.random.default_rng(9)
    params, x0, _ = problem(9, 4, 2, 3, 2)
    x = np.concatenate([x0] * 4)
    y = np.concatenate([s * 1e4 + rng.standard_normal((4, 2)) for s in (1.0, -1.0, 1.0, -1.0)])
    exact = ref.mlp_grads(params, x, y)
    assert_grads(kernels.accumulated_grads(params, x, y, 4, threads_per_block=16), exact, atol=1e-9)
    narrow = kernels.accumulated_grads(params, x, y, 4, buffer_dtype=np.float32, threads_per_block=16)
    assert all(g.dtype == np.float32 for g in narrow)
    error = max(float(np.max(np.abs(g.astype(np.float64) - e))) for g, e in zip(narrow, exact))
    assert error > 1e-6, error


def test_float32_micro_batches_into_a_float64_buffer():
    """Mixed precision: the micro-batches run in float32, the buffer is float64."""
    params, x, y = problem(10, 6, 3, 4, 2)
    got = kernels.accumulated_grads(params, x.astype(np.float32), y.astype(np.float32), 4, threads_per_block=16)
    assert all(g.dtype == np.float64 for g in got)
    for g, e in zip(got, ref.mlp_grads(params, x, y)):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("seed, n, d_in, hidden, d_out, micro_batch", [
    (10, 7, 3, 5, 2, 3),     # an uneven last micro-batch (kernels/vram_trap_v2.py's tiled products)
    (11, 20, 17, 6, 2, 20),  # inputs past one 16-step of the shared axis; the bias row past none
])
def test_version_2_matches_the_solution(seed, n, d_in, hidden, d_out, micro_batch):
    from backprop_traps.kernels import grad_accumulation_v2 as v2
    params, x, y = problem(seed, n, d_in, hidden, d_out)
    got = v2.accumulated_grads(params, x, y, micro_batch)
    assert_grads(got, ref.accumulated_grads(params, x, y, micro_batch))
    narrow = v2.accumulated_grads(params, x.astype(np.float32), y.astype(np.float32), micro_batch)
    assert_grads(narrow, ref.mlp_grads(params, x, y), rtol=1e-4, atol=1e-5)
