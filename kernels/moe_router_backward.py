"""Numba CUDA kernels for moe_router_backward: a top-k router's forward (the selected experts,
their renormalised gates, the probabilities over all experts, the expert statistics of the
load-balancing loss) and its backward to the tokens and the router's weights.

Version 1, the teaching version (no _v2 yet): one thread per token, as one writes it on paper.

1. ``route_kernel``: a thread per token reads its E logits three times: their max and the
   softmax over all E (``probs``, for the balancing loss), then the k largest one slot at a
   time (each slot the largest logit that ranks after the previous slot's, equal logits by the
   lower expert index: no local array, no sort), then the softmax over those k (``gates``).
2. ``expert_share_kernel`` and ``mean_prob_kernel``: a thread per expert counts its routing
   slots (``f``, over N * k), or averages its probability over the tokens (``P``), in a fixed order: no atomics, so the
   sums are the same on every run. The host adds the E products f_i P_i.
3. ``dlogits_kernel``: a thread per token writes its row of the gradient at the logits: the
   balancing loss's share for every expert, through the softmax over all E, then the gates'
   share for the k experts ``idx`` names only; every other expert gets nothing from the gates.
4. The three products, ``logits = x Wr``, ``dx = dlogits Wr^T`` and ``dWr = x^T dlogits``, are
   the tiled matrix product of kernels/common/tiled_matmul.py (transposes never formed).

Check and time it: python -m backprop_traps.kernels.moe_router_backward (from any folder) runs
these kernels on the benchmark's tiny cases in float64 and float32 against the solution
notebook and times them (kernels/runtime/self_check.py; the simulator without a GPU).

Run the tests under the Numba CUDA simulator (no GPU needed):
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_moe_router_backward_kernels.py
or on a GPU with BACKPROP_TRAPS_REAL_GPU=1. Shapes: N tokens, D features, E experts, k slots;
x (N, D), Wr (D, E), logits and probs and dlogits (N, E), gates and idx and dgates (N, k),
f and P (E,). Every array is flat inside the kernels, indexed with unsigned offsets.
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.moe_router_backward: the simulator without a GPU
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import math

import numpy as np

from backprop_traps.kernels.common import tiled_matmul
from backprop_traps.kernels.runtime.device import cuda  # numba.cuda, its simulator (launches checked) or numba-cuda-mlir
from backprop_traps.kernels.runtime.launch_limits import MAX_GRID
from backprop_traps.kernels.common.patterns import i64, u64

THREADS_PER_BLOCK = 128


def blocks(count: int) -> int:
    """Blocks of THREADS_PER_BLOCK for ``count`` threads (the kernels stride past MAX_GRID)."""
    return max(1, min(math.ceil(count / THREADS_PER_BLOCK), MAX_GRID[0]))


# 1. forward: one thread per token ------------------------------------------------------------
@cuda.jit
def route_kernel(logits, n_tokens, n_experts, k, gates, idx, probs):
    n = u64(cuda.grid(1))
    while n < n_tokens:
        base, slots = n * n_experts, n * k
        m = logits[base]
        for e in range(u64(1), n_experts):
            m = max(m, logits[base + e])
        zero = m - m  # in the logits' dtype (a literal 0 would make float32 math float64)
        total = zero
        for e in range(n_experts):
            total += math.exp(logits[base + e] - m)
        for e in range(n_experts):
            probs[base + e] = math.exp(logits[base + e] - m) / total   # softmax over all E
        prev_v, prev_e = m, i64(-1)
        for j in range(k):  # slot j: the largest logit ranking after slot j - 1's
            best_v, best_e = m, i64(-1)
            for e in range(n_experts):
                v = logits[base + e]
                after = v < prev_v or (v == prev_v and i64(e) > prev_e)
                if after and (best_e < 0 or v > best_v):  # strict: a tie keeps the lower index
                    best_v, best_e = v, i64(e)
            idx[slots + j] = best_e
            gates[slots + j] = best_v  # the logit for now; slot 0 holds the largest
            prev_v, prev_e = best_v, best_e
        top = gates[slots]
        total = zero
        for j in range(k):
            gates[slots + j] = math.exp(gates[slots + j] - top)
            total += gates[slots + j]
        for j in range(k):
            gates[slots + j] /= total  # softmax over the k selected only
        n += u64(cuda.gridDim.x) * u64(cuda.blockDim.x)


# 2. the balancing loss's statistics: one thread per expert -------------------------------------
@cuda.jit
def expert_share_kernel(idx, n_tokens, n_experts, k, one_slot, f):
    # one_slot = 1 / (N * k) in the arrays' dtype: f[e] adds it once per slot that chose e.
    e = u64(cuda.grid(1))
    while e < n_experts:
        share = one_slot - one_slot
        for s in range(n_tokens * k):
            if idx[s] == i64(e):
                share += one_slot
        f[e] = share   # a count: the backward holds it constant
        e += u64(cuda.gridDim.x) * u64(cuda.blockDim.x)


@cuda.jit
def mean_prob_kernel(probs, n_tokens, n_experts, one_token, P):
    # one_token = 1 / N in the probabilities' dtype.
    e = u64(cuda.grid(1))
    while e < n_experts:
        total = probs[e] - probs[e]
        for n in range(n_tokens):
            total += probs[n * n_experts + e]
        P[e] = total * one_token
        e += u64(cuda.gridDim.x) * u64(cuda.blockDim.x)


# 3. backward to the logits: one thread per token -----------------------------------------------
@cuda.jit
def dlogits_kernel(dgates, logits, idx, f, aux_scale, n_tokens, n_experts, k, dlogits):
    # aux_scale = aux_coef * E / N: d aux_loss / d probs[n, e] = aux_scale * f[e] for every n.
    n = u64(cuda.grid(1))
    while n < n_tokens:
        base, slots = n * n_experts, n * k
        m = logits[base]
        for e in range(u64(1), n_experts):
            m = max(m, logits[base + e])
        zero = m - m  # in the logits' dtype
        total = zero
        for e in range(n_experts):
            total += math.exp(logits[base + e] - m)
        pa = zero  # <p, a>: the softmax backward's row sum
        for e in range(n_experts):
            pa += math.exp(logits[base + e] - m) / total * aux_scale * f[e]
        for e in range(n_experts):  # the balancing loss: every expert, through P
            p = math.exp(logits[base + e] - m) / total
            dlogits[base + e] = p * (aux_scale * f[e] - pa)
        top = logits[base + u64(idx[slots])]
        for j in range(u64(1), k):
            top = max(top, logits[base + u64(idx[slots + j])])
        gsum, dot = zero, zero
        for j in range(k):
            gsum += math.exp(logits[base + u64(idx[slots + j])] - top)
        for j in range(k):
            dot += math.exp(logits[base + u64(idx[slots + j])] - top) / gsum * dgates[slots + j]
        for j in range(k):  # the gates: only the k experts idx names
            g = math.exp(logits[base + u64(idx[slots + j])] - top) / gsum
            dlogits[base + u64(idx[slots + j])] += g * (dgates[slots + j] - dot)
        n += u64(cuda.gridDim.x) * u64(cuda.blockDim.x)


# launchers: device arrays in, launched ---------------------------------------------------------
def flat(a):
    return a.reshape(a.size)


def router_forward_device(d_x, d_Wr, k, d_logits, d_gates, d_idx, d_probs, d_f, d_P):
    """logits = x Wr, then the routing and the expert statistics, all on the device."""
    N, E = d_logits.shape
    tiled_matmul.matmul(d_x, d_Wr, d_logits)
    route_kernel[blocks(N), THREADS_PER_BLOCK](flat(d_logits), u64(N), u64(E), u64(k), flat(d_gates),
                                               flat(d_idx), flat(d_probs))
    dtype = d_logits.dtype.type
    expert_share_kernel[blocks(E), THREADS_PER_BLOCK](flat(d_idx), u64(N), u64(E), u64(k), dtype(1 / (N * k)), d_f)
    mean_prob_kernel[blocks(E), THREADS_PER_BLOCK](flat(d_probs), u64(N), u64(E), dtype(1 / N), d_P)


def router_backward_device(d_dgates, d_x, d_Wr, d_idx, aux_coef, d_logits, d_f, d_dlogits, d_dx, d_dWr):
    """dx and dWr from dgates and the forward's idx; logits and f are scratch."""
    N, E = d_logits.shape
    k = d_idx.shape[1]
    tiled_matmul.matmul(d_x, d_Wr, d_logits)
    dtype = d_logits.dtype.type
    expert_share_kernel[blocks(E), THREADS_PER_BLOCK](flat(d_idx), u64(N), u64(E), u64(k), dtype(1 / (N * k)), d_f)
    scale = dtype(aux_coef * E / N)
    dlogits_kernel[blocks(N), THREADS_PER_BLOCK](flat(d_dgates), flat(d_logits), flat(d_idx), d_f, scale,
                                                 u64(N), u64(E), u64(k), flat(d_dlogits))
    tiled_matmul.matmul(d_dlogits, d_Wr, d_dx, b_transposed=True)   # (N, E) (E, D): Wr^T never formed
    tiled_matmul.matmul(d_x, d_dlogits, d_dWr, a_transposed=True)   # (D, N) (N, E): x^T never formed


# numpy in, numpy out (the contract's functions) -------------------------------------------------
def router_forward(x, Wr, k, aux_coef):
    """(gates (N, k), idx int64 (N, k), aux_loss float) as the contract's router_forward."""
    x, Wr = np.ascontiguousarray(x), np.ascontiguousarray(Wr)
    N, E = x.shape[0], Wr.shape[1]
    d_logits, d_probs = (cuda.device_array((N, E), dtype=x.dtype) for _ in range(2))
    d_gates, d_idx = cuda.device_array((N, k), dtype=x.dtype), cuda.device_array((N, k), dtype=np.int64)
    d_f, d_P = cuda.device_array(E, dtype=x.dtype), cuda.device_array(E, dtype=x.dtype)
    router_forward_device(cuda.to_device(x), cuda.to_device(Wr), k, d_logits, d_gates, d_idx, d_probs, d_f, d_P)
    f, P = d_f.copy_to_host(), d_P.copy_to_host()
    return d_gates.copy_to_host(), d_idx.copy_to_host(), float(aux_coef * E * np.sum(f * P))


def router_backward(dgates, x, Wr, idx, aux_coef):
    """(dx (N, D), dWr (D, E)) as the contract's router_backward."""
    x, Wr = np.ascontiguousarray(x), np.ascontiguousarray(Wr)
    N, D, E = x.shape[0], x.shape[1], Wr.shape[1]
    d_logits, d_dlogits = (cuda.device_array((N, E), dtype=x.dtype) for _ in range(2))
    d_f = cuda.device_array(E, dtype=x.dtype)
    d_dx, d_dWr = cuda.device_array((N, D), dtype=x.dtype), cuda.device_array((D, E), dtype=x.dtype)
    router_backward_device(cuda.to_device(np.ascontiguousarray(dgates, dtype=x.dtype)), cuda.to_device(x),
                           cuda.to_device(Wr), cuda.to_device(np.ascontiguousarray(idx, dtype=np.int64)),
                           aux_coef, d_logits, d_f, d_dlogits, d_dx, d_dWr)
    return d_dx.copy_to_host(), d_dWr.copy_to_host()


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("moe_router_backward"))
