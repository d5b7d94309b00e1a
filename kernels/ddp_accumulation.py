"""Data-parallel gradient accumulation in Numba CUDA: every rank's micro-steps, then one ring all-reduce.

The R ranks are simulated on one device: their gradient buffers are the rows of one array
bufs (R, P), P = D_in * D_out + D_out (rank r's dW flattened, then its db). The model is the
solution's linear layer, params = (W (D_in, D_out), b (D_out,)). One optimizer step is:

  micro-steps (each rank r, each micro-batch k of its shard: vram_trap's kernels, no new code)
     1. linear_forward_kernel: out = x_k @ W + b
     2. mse_loss_backward_kernel with inv_n = 1 / N, the GLOBAL batch's rows: dout = (out - y_k) / N,
        so the micro-batch's gradient arrives weighted by n_rk / N, never by 1 / n_r or 1 / K.
     3. kernel 4 (partial sums over rows, then their sum) with ``accumulate``: bufs[r]'s dW += x_k.T @ dout,
        db += sum_n dout, in place. No communication: this is what ``no_sync`` leaves.
  the sync (once, after every rank's last micro-step): a ring all-reduce in 2 (R - 1) launches.
     The buffer is cut into R chunks of C = ceil(P / R) entries.
     4. ring_reduce_scatter_kernel, steps s = 0 .. R - 2: every rank r sends chunk (r - s) mod R to
        rank r + 1 (mod R), which adds it into its own copy. After R - 1 steps rank r holds the
        whole sum of chunk (r + 1) mod R.
     5. ring_all_gather_kernel, steps s = 0 .. R - 2: every rank r sends chunk (r + 1 - s) mod R,
        complete, to rank r + 1, which overwrites its copy. Then every rank holds every sum.
     In one step a rank writes one chunk and reads (sends) another, so no thread reads what
     another writes: no atomics, no race, and the sums are taken in the same order every time.
     A 2-D grid, x along a chunk and y over the ranks, and neighbours found by comparison
     (``ring_neighbours``): no integer division per element.

Why a ring: each rank sends 2 (R - 1) chunks, 2 (R - 1) / R * P values per all-reduce, nearly
independent of R: the traffic NCCL's ring all-reduce has, and the reason an all-reduce per
micro-step costs K times one per step (``ring_traffic``). On real GPUs the chunks cross NVLink
or the network between devices; here they cross rows of one array, so the kernels teach the
schedule, not the speed. PyTorch's counterpart on one device is the sum over the ranks' rows
written back to every row.

Shape letters: R ranks, n_r rows in rank r's shard, N their sum, m = micro_batch, P the
gradient's entries, C = ceil(P / R) a chunk. TPB = threads per block.

Run: the host functions at the bottom take and return numpy arrays. Without a GPU set
NUMBA_ENABLE_CUDASIM=1 before numba is imported (tests/conftest.py does):
    python -m pytest tests/kernels/test_ddp_accumulation_kernels.py
on a GPU, BACKPROP_TRAPS_REAL_GPU=1.

Check and time it: python -m backprop_traps.kernels.ddp_accumulation (from any folder) runs these
kernels on the benchmark's tiny cases in float64 and float32 against the solution notebook, the
CPU reference, and times them (kernels/runtime/self_check.py; the simulator without a GPU).
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.ddp_accumulation: no GPU? the simulator, before numba loads
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import math

import numpy as np

from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.vram_trap import (THREADS_PER_BLOCK, backward_params, linear_forward_device,
                                              mse_loss_backward_device, partials_shape)


# ---------------------------------------------------------------- the ring all-reduce

@cuda.jit(device=True)
def ring_neighbours(r, step, shift, R):
    """(the chunk rank r sends at this step, the rank it sends to): (r + shift - step) mod R and
    (r + 1) mod R, by comparison (step < R, shift <= 1): no integer division on the GPU."""
    c = r + shift - step
    if c < 0:
        c += R
    if c >= R:
        c -= R
    to = r + 1
    if to == R:
        to = 0
    return c, to


@cuda.jit
def ring_reduce_scatter_kernel(bufs, step, chunk):
    """Reduce-scatter step ``step``: rank r adds its chunk (r - step) mod R into rank r + 1's.
    A 2-D grid: x an entry of a chunk, y the sending rank; bufs (R, P)."""
    i, r = cuda.grid(2)
    R, P = bufs.shape
    if i < chunk and r < R:
        c, to = ring_neighbours(r, step, 0, R)
        e = c * chunk + i  # an entry of the chunk rank r sends
        if e < P:
            bufs[to, e] += bufs[r, e]


@cuda.jit
def ring_all_gather_kernel(bufs, step, chunk):
    """All-gather step ``step``: rank r copies its complete chunk (r + 1 - step) mod R to rank r + 1."""
    i, r = cuda.grid(2)
    R, P = bufs.shape
    if i < chunk and r < R:
        c, to = ring_neighbours(r, step, 1, R)
        e = c * chunk + i
        if e < P:
            bufs[to, e] = bufs[r, e]


def ring_traffic(ranks: int, entries: int) -> int:
    """Values one rank sends in one ring all-reduce of ``entries`` values: 2 (R - 1) chunks."""
    return 2 * (ranks - 1) * math.ceil(entries / ranks) if ranks > 1 else 0


# ---------------------------------------------------------------- host side: device arrays in, out

def ring_all_reduce_device(d_bufs, threads_per_block=THREADS_PER_BLOCK):
    """Kernels 4 and 5 on d_bufs (R, P), in place: every row ends as the sum of the rows."""
    R, P = d_bufs.shape
    chunk = math.ceil(P / R)
    grid = (max(1, math.ceil(chunk / threads_per_block)), R)  # R <= 65,535 ranks along y
    for step in range(R - 1):
        ring_reduce_scatter_kernel[grid, threads_per_block](d_bufs, step, chunk)
    for step in range(R - 1):
        ring_all_gather_kernel[grid, threads_per_block](d_bufs, step, chunk)


def workspace(micro_batch, d_in, d_out, dtype):
    """The device scratch of one micro-step of up to ``micro_batch`` rows, allocated once."""
    m = micro_batch
    return {"out": cuda.device_array((m, d_out), dtype), "dout": cuda.device_array((m, d_out), dtype),
            "row_sq": cuda.device_array(m, dtype), "no_mask": cuda.device_array(1, np.uint8),
            "partials": cuda.device_array(partials_shape(m, d_in, d_out), dtype)}


def micro_step_device(d_W, d_b, d_x, d_y, d_buffer, inv_n, ws):
    """Kernels 1 to 3 on one micro-batch (device arrays): its gradient, weighted by n_rk / N through
    ``inv_n = 1 / N``, added into ``d_buffer`` (one rank's row of bufs, P entries) in place."""
    n_k, (d_in, d_out) = d_x.shape[0], d_W.shape
    d_dW, d_db = d_buffer[:d_in * d_out].reshape((d_in, d_out)), d_buffer[d_in * d_out:]
    d_out_k, d_dout = ws["out"][:n_k], ws["dout"][:n_k]
    partials = ws["partials"]
    if partials.shape[0] != partials_shape(n_k, d_in, d_out)[0]:
        partials = None  # a shorter last micro-batch: its scratch is sized by kernel 4 itself
    linear_forward_device(d_x, d_W, d_b, d_out_k)
    mse_loss_backward_device(d_out_k, d_y, d_dout, ws["row_sq"][:n_k], inv_n)
    backward_params(d_dout, ws["no_mask"], False, d_x, d_dW, d_db, d_x.dtype.type(0), True, partials)


def ddp_step_device(d_W, d_b, d_xs, d_ys, d_bufs, micro_batch, ws):
    """The whole step: every rank's micro-steps into its row of ``d_bufs`` (zeroed by the caller,
    once per step), then one ring all-reduce."""
    inv_n = 1.0 / sum(d_x.shape[0] for d_x in d_xs)  # the global batch: every rank knows N
    for r, (d_x, d_y) in enumerate(zip(d_xs, d_ys)):
        for start in range(0, d_x.shape[0], micro_batch):
            stop = min(start + micro_batch, d_x.shape[0])
            micro_step_device(d_W, d_b, d_x[start:stop], d_y[start:stop], d_bufs[r], inv_n, ws)
    ring_all_reduce_device(d_bufs)


# ---------------------------------------------------------------- host functions: numpy in, out

def all_reduce(tensors):
    """As the setup cell's all_reduce: one array per rank in, every rank gets back the sum."""
    arrays = [np.ascontiguousarray(t).ravel() for t in tensors]
    d_bufs = cuda.to_device(np.stack(arrays))
    ring_all_reduce_device(d_bufs)
    shape = np.shape(tensors[0])
    return [row.reshape(shape) for row in d_bufs.copy_to_host()]


def ddp_grads(params, xs, ys, micro_batch):
    """As the solution's ddp_grads: one (dW, db) per rank, in the shards' dtype."""
    dtype = xs[0].dtype
    W, b = (np.ascontiguousarray(p, dtype=dtype) for p in params)
    d_W, d_b = cuda.to_device(W), cuda.to_device(b)
    d_xs = [cuda.to_device(np.ascontiguousarray(x)) for x in xs]
    d_ys = [cuda.to_device(np.ascontiguousarray(y, dtype=dtype)) for y in ys]
    d_bufs = cuda.to_device(np.zeros((len(xs), W.size + b.size), dtype))  # zeroed once per step
    ws = workspace(min(micro_batch, max(x.shape[0] for x in xs)), *W.shape, dtype)
    ddp_step_device(d_W, d_b, d_xs, d_ys, d_bufs, micro_batch, ws)
    return [(row[:W.size].reshape(W.shape), row[W.size:]) for row in d_bufs.copy_to_host()]


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("ddp_accumulation"))
