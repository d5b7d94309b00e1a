"""A tiny language model's training step, Numba CUDA: one kernel per op, forward above backward.

The plan of llm.c's dev/cuda/*.cu files: a CPU reference (the solution notebook's
``ninja_forward`` and ``ninja_backward``), numbered kernels, and a launcher that validates
them against the reference and times them. The model is question 16's: a tied embedding E,
linear -> LayerNorm -> tanh -> inverted dropout -> linear -> logits = z @ E.T -> softmax-CE.

Forward
1. ``embedding_forward_kernel``: one thread per (channel, position), a gather from E.
2. ``matmul_bias_kernel``: one thread per output element, out = A @ W + b; the linear
   layers, and the tied output layer (W = E transposed, no bias). Backward reuses it for
   every matrix product, with the operands transposed on the host.
3. ``layernorm_forward_kernel``: one thread per row: two passes (mean, then the biased
   variance), then xhat and gamma * xhat + beta (rows here are short: question 11's kernels
   give a row a block).
4. ``tanh_dropout_forward_kernel``: one thread per unit, fused: h = tanh(hln), and hdrop from
   the unit's bit of ``keep_bits`` (np.packbits' order) times 1 / (1 - p), never unpacked.
5. ``cross_entropy_forward_kernel``: one thread per row: max, log-sum-exp, the row's loss.
   The host averages the B losses (a fixed order: the same bits every run).
Backward
6. ``cross_entropy_backward_kernel``: one thread per logit: (softmax - onehot) / B, from 5's
   row max and sum.
7. ``column_sum_kernel``: one thread per column, the biases' gradients in a fixed order.
8. ``dropout_tanh_backward_kernel``: one thread per unit: dh from the same bit and scale,
   dhln = dh * (1 - h^2), from tanh's output.
9. ``layernorm_backward_kernel``: one thread per row: the two row means, then dhpre;
   ``layernorm_param_kernel``: one thread per unit for dgamma and dbeta.
10. ``embedding_backward_kernel``: one thread per (channel, position), ``cuda.atomic.add``
   into dE's row idx: positions sharing an id add into one address, and only an atomic keeps
   every contribution (a plain += loses them: the embedding-overwrite trap in hardware). The
   atomics' order varies, so dE's last bits may too; dE already holds the output layer's part.
11. ``embedding_backward_gather_kernel``: the deterministic alternative, one thread per (id,
   channel) adding, in a fixed order, the positions naming its id: V times the reads.

Every constant is made in the arrays' dtype (issue 34: a float32 step had float64 literals in
five kernels); the elementwise kernels index flat arrays with unsigned offsets, on 2-D grids
where a thread needs a (row, column): no 64-bit division to find an element.
Run: NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_backprop_ninja_kernels.py (on
a GPU, BACKPROP_TRAPS_REAL_GPU=1). ``python -m backprop_traps.kernels.backprop_ninja`` runs
every kernel on the tiny cases (kernels/cases/backprop_ninja.py: a whole step of the solution)
in float64 and float32 against the solution notebook, and times them. The launchers
(``*_device``) take device arrays and only launch (their grids are what the dry run checks).

Shapes: B examples, T tokens each, V vocabulary, C channels, H hidden units; float32 or
float64 (the host functions allocate float64). idx (B, T) int64; E (V, C); W1 (T*C, H); W2 (H, C).
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.backprop_ninja: no GPU? the simulator, before numba loads
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import math

import numpy as np

from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.runtime.launch_limits import MAX_GRID
from backprop_traps.kernels.common.patterns import i64, u64

THREADS = 64
WIDE = (32, 8)  # 2-D launches: columns along x, rows along y (strided past 65,535 blocks)


def launch(n: int, threads: int = THREADS) -> tuple[int, int]:
    """(blocks, threads) covering n threads; at least one block."""
    return max(1, math.ceil(n / threads)), threads


def wide(columns: int, rows: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """(grid, block) for a 2-D launch of WIDE blocks over (columns, rows)."""
    return (max(1, math.ceil(columns / WIDE[0])), max(1, min(math.ceil(rows / WIDE[1]), MAX_GRID[1]))), WIDE


def flat(a):
    return a.reshape(a.size)


# 1. the embedding's gather -------------------------------------------------------------------
@cuda.jit
def embedding_forward_kernel(idx, E, channels, emb):
    # idx: B*T; E: V*C; channels: C as u64; emb: B*T*C (written). Thread (c, position), strided.
    c, pos, stride = u64(cuda.grid(2)[0]), u64(cuda.grid(2)[1]), u64(cuda.gridsize(2)[1])
    while c < channels and pos < u64(idx.size):
        emb[pos * channels + c] = E[u64(idx[pos]) * channels + c]
        pos += stride


# 2. every matrix product ---------------------------------------------------------------------
@cuda.jit
def matmul_bias_kernel(A, W, bias, out):
    # A: M, K; W: K, N; bias: N; out: M, N (written) = A @ W + bias
    i = cuda.grid(1)
    if i < out.shape[0] * out.shape[1]:
        row, col = i // out.shape[1], i % out.shape[1]
        acc = bias[col]
        for k in range(A.shape[1]):
            acc += A[row, k] * W[k, col]
        out[row, col] = acc


# 3. LayerNorm, one row per thread ------------------------------------------------------------
@cuda.jit
def layernorm_forward_kernel(hpre, gamma, beta, eps, mean, rstd, xhat, hln):
    # hpre: B, H; gamma, beta: H; mean, rstd: B (written); xhat, hln: B, H (written)
    row = cuda.grid(1)
    if row < hpre.shape[0]:
        units = hpre.shape[1]
        n, m, var = hpre.dtype.type(units), hpre.dtype.type(0), hpre.dtype.type(0)  # in the arrays' dtype
        for j in range(units):
            m += hpre[row, j]
        m /= n
        for j in range(units):
            d = hpre[row, j] - m
            var += d * d
        r = hpre.dtype.type(1) / math.sqrt(var / n + eps)  # biased variance, eps inside the root
        mean[row], rstd[row] = m, r
        for j in range(units):
            xh = (hpre[row, j] - m) * r
            xhat[row, j] = xh
            hln[row, j] = gamma[j] * xh + beta[j]


@cuda.jit(device=True)
def kept(keep_bits, i):
    """Unit i's bit in np.packbits order: the most significant bit of each byte first."""
    return (keep_bits[i // 8] >> (7 - i % 8)) & 1


# 4. tanh and dropout, fused ------------------------------------------------------------------
@cuda.jit
def tanh_dropout_forward_kernel(hln, keep_bits, scale, h, hdrop):
    # hln: B*H; keep_bits: ceil(B*H / 8) uint8; scale = 1 / (1 - p) in hln's dtype; h, hdrop: B*H
    i = u64(cuda.grid(1))
    if i < u64(hln.size):
        t = math.tanh(hln[i])
        h[i] = t
        hdrop[i] = t * scale if kept(keep_bits, i) else hln.dtype.type(0)


# 5. softmax cross-entropy, one row per thread -------------------------------------------------
@cuda.jit
def cross_entropy_forward_kernel(logits, targets, row_max, row_sum, losses):
    # logits: B, V; targets: B; row_max, row_sum, losses: B (written)
    row = cuda.grid(1)
    if row < logits.shape[0]:
        m = logits[row, 0]
        for v in range(1, logits.shape[1]):
            m = max(m, logits[row, v])
        s = logits.dtype.type(0)
        for v in range(logits.shape[1]):
            s += math.exp(logits[row, v] - m)  # every term <= 1: no overflow
        row_max[row], row_sum[row] = m, s
        losses[row] = math.log(s) + m - logits[row, targets[row]]


# 6. softmax cross-entropy's backward ---------------------------------------------------------
@cuda.jit
def cross_entropy_backward_kernel(logits, targets, row_max, row_sum, vocab, dlogits):
    # logits: B*V; targets: B; row_max, row_sum: B (from 5); vocab: V as u64; dlogits: B*V
    # (written). Thread (v, row), rows strided.
    v, row, stride = u64(cuda.grid(2)[0]), u64(cuda.grid(2)[1]), u64(cuda.gridsize(2)[1])
    inv_b = logits.dtype.type(1) / logits.dtype.type(targets.size)  # the loss is the batch mean
    while v < vocab and row < u64(targets.size):
        at = row * vocab + v
        p = math.exp(logits[at] - row_max[row]) / row_sum[row]
        if i64(v) == targets[row]:
            p -= logits.dtype.type(1)
        dlogits[at] = p * inv_b
        row += stride


# 7. a bias's gradient: a column sum in a fixed order ------------------------------------------
@cuda.jit
def column_sum_kernel(grad, out):
    # grad: M, N; out: N (written)
    col = cuda.grid(1)
    if col < grad.shape[1]:
        acc = grad.dtype.type(0)
        for row in range(grad.shape[0]):
            acc += grad[row, col]
        out[col] = acc


# 8. dropout and tanh, backward, fused ---------------------------------------------------------
@cuda.jit
def dropout_tanh_backward_kernel(dhdrop, keep_bits, scale, h, dh, dhln):
    # dhdrop, h: B*H; keep_bits, scale: as 4's; dh, dhln: B*H (written)
    i = u64(cuda.grid(1))
    if i < u64(h.size):
        g = dhdrop[i] * scale if kept(keep_bits, i) else h.dtype.type(0)  # the same mask, the same scale
        dh[i] = g
        t = h[i]
        dhln[i] = g * (h.dtype.type(1) - t * t)  # tanh' from tanh's output


# 9. LayerNorm's backward ---------------------------------------------------------------------
@cuda.jit
def layernorm_backward_kernel(dhln, gamma, xhat, rstd, dhpre):
    # dhln, xhat: B, H; gamma: H; rstd: B; dhpre: B, H (written)
    row = cuda.grid(1)
    if row < dhln.shape[0]:
        units = dhln.shape[1]
        n, mean_g, mean_gx = dhln.dtype.type(units), dhln.dtype.type(0), dhln.dtype.type(0)
        for j in range(units):
            g = dhln[row, j] * gamma[j]
            mean_g += g
            mean_gx += g * xhat[row, j]
        mean_g /= n
        mean_gx /= n
        for j in range(units):
            dhpre[row, j] = rstd[row] * (dhln[row, j] * gamma[j] - mean_g - xhat[row, j] * mean_gx)


@cuda.jit
def layernorm_param_kernel(dhln, xhat, dgamma, dbeta):
    # dhln, xhat: B, H; dgamma, dbeta: H (written), summed over the batch in a fixed order
    j = cuda.grid(1)
    if j < dhln.shape[1]:
        acc_gamma, acc_beta = dhln.dtype.type(0), dhln.dtype.type(0)
        for row in range(dhln.shape[0]):
            acc_gamma += dhln[row, j] * xhat[row, j]
            acc_beta += dhln[row, j]
        dgamma[j], dbeta[j] = acc_gamma, acc_beta


# 10. the embedding's scatter-add ---------------------------------------------------------------
@cuda.jit
def embedding_backward_kernel(idx, demb, channels, dE):
    # idx: B*T; demb: B*T*C; channels: C as u64; dE: V*C (added into: it already holds the
    # output layer's part). Thread (c, position), strided as kernel 1.
    c, pos, stride = u64(cuda.grid(2)[0]), u64(cuda.grid(2)[1]), u64(cuda.gridsize(2)[1])
    while c < channels and pos < u64(idx.size):
        cuda.atomic.add(dE, u64(idx[pos]) * channels + c, demb[pos * channels + c])  # repeated ids share it
        pos += stride


# 11. the same scatter-add, deterministic: each (id, channel) gathers its positions in order -----
@cuda.jit
def embedding_backward_gather_kernel(idx, demb, dE):
    # idx: B, T; demb: B, T, C; dE: V, C (added into). One thread per (v, c) walks every position
    # in the same order and adds those that name v: no two threads share an address, so no
    # atomics, and the same bits on every run, for V * B * T reads instead of B * T.
    c, v, stride = cuda.grid(2)[0], cuda.grid(2)[1], cuda.gridsize(2)[1]
    while c < dE.shape[1] and v < dE.shape[0]:
        acc = dE[v, c]
        for b in range(idx.shape[0]):
            for t in range(idx.shape[1]):
                if idx[b, t] == v:
                    acc += demb[b, t, c]
        dE[v, c] = acc
        v += stride


# launchers: device arrays in, launched ------------------------------------------------------------
# One thread per element, row or column, in 1-D grids of THREADS: past 2**31 - 1 blocks only
# beyond 1.3e11 threads, far more than 80 GB holds.
def embedding_forward_device(d_idx, d_E, d_emb):
    """Kernel 1: d_emb (B, T, C) = E[idx], a thread per (channel, position)."""
    C = d_E.shape[1]
    embedding_forward_kernel[wide(C, d_idx.size)](flat(d_idx), flat(d_E), u64(C), flat(d_emb))


def matmul_device(d_A, d_W, d_bias, d_out):
    """Kernel 2: d_out (M, N) = A @ W + bias."""
    matmul_bias_kernel[launch(d_out.size)](d_A, d_W, d_bias, d_out)


def layernorm_forward_device(d_hpre, d_gamma, d_beta, eps, d_mean, d_rstd, d_xhat, d_hln):
    """Kernel 3: one thread per row of d_hpre (B, H)."""
    layernorm_forward_kernel[launch(d_hpre.shape[0])](d_hpre, d_gamma, d_beta, d_hpre.dtype.type(eps), d_mean,
                                                     d_rstd, d_xhat, d_hln)


def tanh_dropout_forward_device(d_hln, d_keep_bits, scale, d_h, d_hdrop):
    """Kernel 4: d_h and d_hdrop (B, H), one thread per unit."""
    tanh_dropout_forward_kernel[launch(d_hln.size)](flat(d_hln), d_keep_bits, d_hln.dtype.type(scale), flat(d_h),
                                                    flat(d_hdrop))


def cross_entropy_forward_device(d_logits, d_targets, d_row_max, d_row_sum, d_losses):
    """Kernel 5: the row statistics and losses (B,), one thread per row."""
    cross_entropy_forward_kernel[launch(d_logits.shape[0])](d_logits, d_targets, d_row_max, d_row_sum, d_losses)


def cross_entropy_backward_device(d_logits, d_targets, d_row_max, d_row_sum, d_dlogits):
    """Kernel 6: d_dlogits (B, V), a thread per (logit, row)."""
    V = d_logits.shape[1]
    cross_entropy_backward_kernel[wide(V, d_logits.shape[0])](flat(d_logits), d_targets, d_row_max, d_row_sum,
                                                             u64(V), flat(d_dlogits))


def column_sum_device(d_grad, d_out):
    """Kernel 7: d_out (N,) = the column sums of d_grad (M, N), one thread per column."""
    column_sum_kernel[launch(d_grad.shape[1])](d_grad, d_out)


def dropout_tanh_backward_device(d_dhdrop, d_keep_bits, scale, d_h, d_dh, d_dhln):
    """Kernel 8: d_dh and d_dhln (B, H), one thread per unit."""
    dropout_tanh_backward_kernel[launch(d_h.size)](flat(d_dhdrop), d_keep_bits, d_h.dtype.type(scale), flat(d_h),
                                                   flat(d_dh), flat(d_dhln))


def layernorm_backward_device(d_dhln, d_gamma, d_xhat, d_rstd, d_dhpre, d_dgamma, d_dbeta):
    """Kernel 9: d_dhpre (B, H), one thread per row; then dgamma and dbeta (H,), one per unit."""
    layernorm_backward_kernel[launch(d_dhln.shape[0])](d_dhln, d_gamma, d_xhat, d_rstd, d_dhpre)
    layernorm_param_kernel[launch(d_dhln.shape[1])](d_dhln, d_xhat, d_dgamma, d_dbeta)


def embedding_backward_device(d_idx, d_demb, d_dE, deterministic=False):
    """Kernel 10 (atomic scatter, one thread per (position, channel)) or, ``deterministic``,
    kernel 11 (one thread per (id, channel)): adds demb into d_dE (V, C)."""
    V, C = d_dE.shape
    if deterministic:
        embedding_backward_gather_kernel[wide(C, V)](d_idx, d_demb, d_dE)
    else:
        embedding_backward_kernel[wide(C, d_idx.size)](flat(d_idx), flat(d_demb), u64(C), flat(d_dE))


# host functions: numpy in, numpy out -------------------------------------------------------------
def matmul(A, W, bias=None):
    """A @ W (+ bias) with kernel 2; operands made contiguous (transposes are copied)."""
    A, W = np.ascontiguousarray(A), np.ascontiguousarray(W)
    bias = np.zeros(W.shape[1], A.dtype) if bias is None else np.ascontiguousarray(bias)
    out = cuda.device_array((A.shape[0], W.shape[1]), dtype=A.dtype)
    matmul_device(cuda.to_device(A), cuda.to_device(W), cuda.to_device(bias), out)
    return out.copy_to_host()


def column_sum(grad):
    out = cuda.device_array(grad.shape[1], dtype=grad.dtype)
    column_sum_device(cuda.to_device(np.ascontiguousarray(grad)), out)
    return out.copy_to_host()


def ninja_forward(params, idx, targets, keep_bits, p_drop, eps):
    """(loss, cache) as the solution's ``ninja_forward``."""
    E, W1, b1 = params["E"], params["W1"], params["b1"]
    gamma, beta, W2, b2 = params["gamma"], params["beta"], params["W2"], params["b2"]
    (B, T), (V, C), H = idx.shape, E.shape, W1.shape[1]
    d_idx = cuda.to_device(np.ascontiguousarray(idx))
    emb = cuda.device_array((B, T, C), dtype=E.dtype)
    embedding_forward_device(d_idx, cuda.to_device(E), emb)
    emb = emb.copy_to_host()
    x = emb.reshape(B, T * C)
    hpre = matmul(x, W1, b1)
    mean, rstd = cuda.device_array(B), cuda.device_array(B)
    xhat, hln = cuda.device_array((B, H)), cuda.device_array((B, H))
    layernorm_forward_device(cuda.to_device(hpre), cuda.to_device(gamma), cuda.to_device(beta), eps,
                             mean, rstd, xhat, hln)
    h, hdrop = cuda.device_array((B, H)), cuda.device_array((B, H))
    tanh_dropout_forward_device(hln, cuda.to_device(keep_bits), 1.0 / (1.0 - p_drop), h, hdrop)
    hdrop_host = hdrop.copy_to_host()
    z = matmul(hdrop_host, W2, b2)
    logits = matmul(z, E.T)  # the tied output layer
    row_max, row_sum, losses = (cuda.device_array(B) for _ in range(3))
    cross_entropy_forward_device(cuda.to_device(logits), cuda.to_device(targets), row_max, row_sum, losses)
    cache = {"emb": emb, "x": x, "hpre": hpre, "mean": mean.copy_to_host(), "rstd": rstd.copy_to_host(),
             "xhat": xhat.copy_to_host(), "hln": hln.copy_to_host(), "h": h.copy_to_host(),
             "hdrop": hdrop_host, "z": z, "logits": logits}
    return float(losses.copy_to_host().mean()), cache


def ninja_backward(params, cache, idx, targets, keep_bits, p_drop, deterministic=False):
    """Every gradient, as the solution's ``ninja_backward``; ``deterministic`` scatters dE's
    embedding part with kernel 11 instead of 10's atomics."""
    E, W1, gamma, W2 = params["E"], params["W1"], params["gamma"], params["W2"]
    (B, T), H = idx.shape, W1.shape[1]
    logits = cuda.to_device(cache["logits"])
    row_max, row_sum, losses = (cuda.device_array(B) for _ in range(3))
    d_targets = cuda.to_device(targets)
    cross_entropy_forward_device(logits, d_targets, row_max, row_sum, losses)
    dlogits = cuda.device_array(cache["logits"].shape)
    cross_entropy_backward_device(logits, d_targets, row_max, row_sum, dlogits)
    dlogits = dlogits.copy_to_host()
    dz = matmul(dlogits, E)
    dE_output = matmul(dlogits.T, cache["z"])  # the tied matrix's first gradient
    dW2, db2, dhdrop = matmul(cache["hdrop"].T, dz), column_sum(dz), matmul(dz, W2.T)
    dh, dhln = cuda.device_array((B, H)), cuda.device_array((B, H))
    dropout_tanh_backward_device(cuda.to_device(dhdrop), cuda.to_device(keep_bits), 1.0 / (1.0 - p_drop),
                                 cuda.to_device(cache["h"]), dh, dhln)
    dhpre, dgamma, dbeta = cuda.device_array((B, H)), cuda.device_array(H), cuda.device_array(H)
    layernorm_backward_device(dhln, cuda.to_device(gamma), cuda.to_device(cache["xhat"]),
                              cuda.to_device(cache["rstd"]), dhpre, dgamma, dbeta)
    dhpre = dhpre.copy_to_host()
    dW1, db1, dx = matmul(cache["x"].T, dhpre), column_sum(dhpre), matmul(dhpre, W1.T)
    demb = dx.reshape(cache["emb"].shape)
    dE = cuda.to_device(dE_output)
    embedding_backward_device(cuda.to_device(np.ascontiguousarray(idx)), cuda.to_device(demb), dE, deterministic)
    return {"dlogits": dlogits, "dz": dz, "dW2": dW2, "db2": db2, "dhdrop": dhdrop,
            "dh": dh.copy_to_host(), "dhln": dhln.copy_to_host(), "dgamma": dgamma.copy_to_host(),
            "dbeta": dbeta.copy_to_host(), "dhpre": dhpre, "dW1": dW1, "db1": db1, "dx": dx,
            "demb": demb, "dE": dE.copy_to_host()}


if __name__ == "__main__":  # check every kernel against the solution and time it: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("backprop_ninja"))
