"""A tied language model in Numba CUDA: one matrix E read by the embedding lookup and by the
output projection, its forward above its backward, and E's gradient as the sum of both reads.

The model is the solution notebook's: x = E[ids], h = tanh(x @ W), logits = h @ E^T, softmax
cross-entropy averaged over the N positions. E's gradient has two shares, the projection's
dlogits^T h (every row of E) and the lookup's scatter of dx into the rows of the ids (only the
rows looked up, repeats added). Kernel 7 computes both in one thread per entry of E, in a fixed
order: the sum is written once, with no atomics and no race between two positions of one id
(the same entry is one thread's alone), so the bits are the same on every run. Inside the
kernels every array is flat and C-ordered; the hot loops index it with unsigned 64-bit offsets
(``_u``), which spares each load the negative-index check a signed index pays.

  forward   1. hidden_forward_kernel: x = E[ids], h = tanh(x @ W), one thread per (n, j) (N, D).
            2. logits_kernel: logits = h @ E^T, one thread per (n, v) (N, V): E read as it lies,
               row v of E is column v of E^T.
            3. softmax_loss_kernel: p = softmax(logits) and each position's loss, one thread per
               row (three passes: the max, the sum of exponentials, the probabilities).
  backward  4. hidden_backward_kernel: dz = (dlogits @ E) * (1 - h^2), one thread per (n, j);
               dlogits = (p - onehot(targets)) / N is formed on the fly, never stored.
            5. weight_grad_kernel: dW = x^T dz, one thread per weight, the positions in order.
            6. input_grad_kernel: dx = dz @ W^T, one thread per (n, i).
            7. tied_grad_kernel: dE[v, d] = sum_n dlogits[n, v] h[n, d] (the projection's share)
               + sum of dx[n, d] over the positions n with ids[n] = v (the lookup's share).

This is the teaching version: naive products, one thread per output. No faster version yet;
where it would go (tiled products, kernels/common/tiled_matmul.py; a sort of the ids and a segmented
sum for the lookup's share) is the same plan as questions 21 and 25.

The launchers (``*_device``) take device arrays in their natural shapes, hand the kernels
flat views (a ravel of a C-ordered array: no copy) and only launch: the benchmark times them
and kernels/runtime/dry_run.py checks their grids at any size. The host functions at the bottom take
and return numpy arrays, as the solution notebook's do. Launches are 1-D: grid x is
ceil(entries / THREADS), under 2^31 - 1 up to 2.7e11 entries.

Run the tests under the simulator (no GPU needed), on a GPU with BACKPROP_TRAPS_REAL_GPU=1:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_weight_tying_kernels.py
Check and time it: python -m backprop_traps.kernels.weight_tying (from any folder) runs these
kernels on the benchmark's tiny cases (kernels/cases/weight_tying.py) in float64 and float32
against the solution notebook, and times them (kernels/runtime/self_check.py; the simulator without a
GPU).

Shapes: V tokens, D features, N positions. E (V, D); W (D, D); ids, targets (N,) int64; x, h,
dz, dx (N, D); logits, p (N, V); losses (N,). Math runs in E's dtype (the zero comes in it).
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.weight_tying: no GPU? the simulator first
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import math

import numba
import numpy as np

from backprop_traps.kernels.runtime.device import cuda

THREADS = 128  # a 1-D grid, one thread per output entry (per row for kernel 3)


@cuda.jit(device=True)
def _u(i):
    """An unsigned 64-bit offset: a flat index that never needs a negative-index check."""
    return numba.uint64(i)


# 1. - 3. forward -------------------------------------------------------------------------------
@cuda.jit
def hidden_forward_kernel(E, W, ids, x, h, N, D, zero):
    # E: V*D; W: D*D; ids: N; x, h: N*D (written), x = E[ids], h = tanh(x @ W)
    i = cuda.grid(1)
    if i < N * D:
        flat, Du = _u(i), _u(D)
        n, j = flat // Du, flat % Du
        row = _u(ids[n]) * Du  # the lookup: row ids[n] of E
        x[flat] = E[row + j]
        acc = zero
        for k in range(Du):
            acc += E[row + k] * W[k * Du + j]
        h[flat] = math.tanh(acc)


@cuda.jit
def logits_kernel(h, E, logits, N, V, D, zero):
    # h: N*D; E: V*D; logits: N*V (written), logits = h @ E^T (the projection reads E again)
    i = cuda.grid(1)
    if i < N * V:
        flat, Vu, Du = _u(i), _u(V), _u(D)
        n, v = flat // Vu, flat % Vu
        acc = zero
        for d in range(Du):
            acc += h[n * Du + d] * E[v * Du + d]
        logits[flat] = acc


@cuda.jit
def softmax_loss_kernel(logits, targets, p, losses, N, V, zero):
    # logits: N*V; targets: N; p: N*V (written); losses: N (written), -log p[n, targets[n]]
    n = cuda.grid(1)
    if n < N:
        Vu = _u(V)
        base = _u(n) * Vu
        top = logits[base]
        for v in range(_u(1), Vu):
            top = max(top, logits[base + v])
        total = zero
        for v in range(Vu):
            total += math.exp(logits[base + v] - top)
        for v in range(Vu):
            p[base + v] = math.exp(logits[base + v] - top) / total
        losses[n] = math.log(total) - (logits[base + _u(targets[n])] - top)


# 4. - 7. backward ------------------------------------------------------------------------------
@cuda.jit(device=True)
def _dlogit(p, targets, n, v, Vu, inv_n):
    """dlogits[n, v] = (p[n, v] - [v == targets[n]]) / N, formed where it is read."""
    value = p[n * Vu + v] * inv_n
    if _u(targets[n]) == v:
        value -= inv_n  # (p - 1) / N, with no constant outside the array's dtype
    return value


@cuda.jit
def hidden_backward_kernel(p, targets, E, h, dz, N, V, D, inv_n, zero, one):
    # p: N*V; targets: N; E: V*D; h: N*D; dz: N*D (written), dz = (dlogits @ E) * (1 - h^2)
    i = cuda.grid(1)
    if i < N * D:
        flat, Vu, Du = _u(i), _u(V), _u(D)
        n, j = flat // Du, flat % Du
        acc = zero
        for v in range(Vu):
            acc += _dlogit(p, targets, n, v, Vu, inv_n) * E[v * Du + j]
        hj = h[flat]
        dz[flat] = acc * (one - hj * hj)  # tanh' from its output


@cuda.jit
def weight_grad_kernel(x, dz, dW, N, D, zero):
    # x, dz: N*D; dW: D*D (written), dW = x^T dz, the positions summed in order
    i = cuda.grid(1)
    if i < D * D:
        flat, Du = _u(i), _u(D)
        r, c = flat // Du, flat % Du
        acc = zero
        for n in range(_u(N)):
            acc += x[n * Du + r] * dz[n * Du + c]
        dW[flat] = acc


@cuda.jit
def input_grad_kernel(dz, W, dx, N, D, zero):
    # dz: N*D; W: D*D; dx: N*D (written), dx = dz @ W^T
    i = cuda.grid(1)
    if i < N * D:
        flat, Du = _u(i), _u(D)
        n, r = flat // Du, flat % Du
        acc = zero
        for c in range(Du):
            acc += dz[n * Du + c] * W[r * Du + c]
        dx[flat] = acc


@cuda.jit
def tied_grad_kernel(p, targets, h, dx, ids, dE, N, V, D, inv_n, zero):
    # p: N*V; h, dx: N*D; ids, targets: N; dE: V*D (written): both reads' shares, summed here
    i = cuda.grid(1)
    if i < V * D:
        flat, Vu, Du = _u(i), _u(V), _u(D)
        v, d = flat // Du, flat % Du
        acc = zero
        for n in range(_u(N)):  # the projection: every position reads row v
            acc += _dlogit(p, targets, n, v, Vu, inv_n) * h[n * Du + d]
        for n in range(_u(N)):  # the lookup: only the positions whose id is v, repeats added
            if _u(ids[n]) == v:
                acc += dx[n * Du + d]
        dE[flat] = acc


# launchers: device arrays in, launched ------------------------------------------------------------
def _blocks(total: int) -> int:
    """Grid x for one thread per entry: at least one block."""
    return max(1, math.ceil(total / THREADS))


def forward_device(d_E, d_W, d_ids, d_targets, d_x, d_h, d_logits, d_p, d_losses):
    """Kernels 1-3: d_x, d_h (N, D), d_logits, d_p (N, V) and d_losses (N,) from d_E (V, D),
    d_W (D, D), d_ids and d_targets (N,)."""
    (V, D), N = d_E.shape, d_ids.shape[0]
    zero = d_E.dtype.type(0)
    hidden_forward_kernel[_blocks(N * D), THREADS](d_E.ravel(), d_W.ravel(), d_ids, d_x.ravel(), d_h.ravel(),
                                                   N, D, zero)
    logits_kernel[_blocks(N * V), THREADS](d_h.ravel(), d_E.ravel(), d_logits.ravel(), N, V, D, zero)
    softmax_loss_kernel[_blocks(N), THREADS](d_logits.ravel(), d_targets, d_p.ravel(), d_losses, N, V, zero)


def backward_device(d_E, d_W, d_ids, d_targets, d_x, d_h, d_p, d_dz, d_dx, d_dE, d_dW):
    """Kernels 4-7: d_dz, d_dx (N, D) as scratch, d_dE (V, D) and d_dW (D, D), from the
    forward's d_x, d_h and d_p."""
    (V, D), N = d_E.shape, d_ids.shape[0]
    zero, one, inv_n = d_E.dtype.type(0), d_E.dtype.type(1), d_E.dtype.type(1.0 / N)
    hidden_backward_kernel[_blocks(N * D), THREADS](d_p.ravel(), d_targets, d_E.ravel(), d_h.ravel(),
                                                    d_dz.ravel(), N, V, D, inv_n, zero, one)
    weight_grad_kernel[_blocks(D * D), THREADS](d_x.ravel(), d_dz.ravel(), d_dW.ravel(), N, D, zero)
    input_grad_kernel[_blocks(N * D), THREADS](d_dz.ravel(), d_W.ravel(), d_dx.ravel(), N, D, zero)
    tied_grad_kernel[_blocks(V * D), THREADS](d_p.ravel(), d_targets, d_h.ravel(), d_dx.ravel(), d_ids,
                                              d_dE.ravel(), N, V, D, inv_n, zero)


# host functions: numpy in, numpy out -----------------------------------------------------------
def _device(a, dtype):
    return cuda.to_device(np.ascontiguousarray(a, dtype=dtype))


def tied_lm_forward(E, W, ids, targets):
    """(loss, cache) as the solution's ``tied_lm_forward``, in E's dtype (the loss a float)."""
    E = np.asarray(E)
    dtype, (V, D), N = E.dtype, E.shape, len(ids)
    d_x, d_h = cuda.device_array((N, D), dtype=dtype), cuda.device_array((N, D), dtype=dtype)
    d_logits, d_p = cuda.device_array((N, V), dtype=dtype), cuda.device_array((N, V), dtype=dtype)
    d_losses = cuda.device_array(N, dtype=dtype)
    forward_device(_device(E, dtype), _device(W, dtype), _device(ids, np.int64), _device(targets, np.int64),
                   d_x, d_h, d_logits, d_p, d_losses)
    loss = float(np.mean(d_losses.copy_to_host().astype(np.float64)))
    return loss, {"x": d_x.copy_to_host(), "h": d_h.copy_to_host(), "p": d_p.copy_to_host()}


def tied_lm_backward(E, W, cache, ids, targets):
    """(dE, dW) as the solution's ``tied_lm_backward``, in E's dtype."""
    E = np.asarray(E)
    dtype, (V, D), N = E.dtype, E.shape, len(ids)
    d_dz, d_dx = cuda.device_array((N, D), dtype=dtype), cuda.device_array((N, D), dtype=dtype)
    d_dE, d_dW = cuda.device_array((V, D), dtype=dtype), cuda.device_array((D, D), dtype=dtype)
    backward_device(_device(E, dtype), _device(W, dtype), _device(ids, np.int64), _device(targets, np.int64),
                    _device(cache["x"], dtype), _device(cache["h"], dtype), _device(cache["p"], dtype),
                    d_dz, d_dx, d_dE, d_dW)
    return d_dE.copy_to_host(), d_dW.copy_to_host()


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("weight_tying"))
