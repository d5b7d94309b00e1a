"""A tiny language model's training step, Numba CUDA: one kernel per op, forward above backward.

The plan of llm.c's dev/cuda/*.cu files: a CPU reference (the solution notebook's
``ninja_forward`` and ``ninja_backward``), numbered kernels, and a launcher that validates
them against the reference and times them. The model is question 16's: a tied embedding E,
linear -> LayerNorm -> tanh -> inverted dropout -> linear -> logits = z @ E.T -> softmax-CE.

Forward
1. ``embedding_forward_kernel``: one thread per (position, channel), a gather from E.
2. ``matmul_bias_kernel``: one thread per output element, out = A @ W + b; the linear
   layers, and the tied output layer (W = E transposed, no bias). Backward reuses it for
   every matrix product, with the operands transposed on the host.
3. ``layernorm_forward_kernel``: one thread per row: two passes (mean, then the biased
   variance), then xhat and gamma * xhat + beta. (Question 11's kernels do this with a block
   per row and Welford's merge; rows here are short.)
4. ``tanh_dropout_forward_kernel``: one thread per unit, fused: h = tanh(hln), and hdrop from
   the unit's bit of ``keep_bits`` (byte i // 8, bit 7 - i % 8: np.packbits' order), scaled
   by 1 / (1 - p). The mask is never unpacked into memory.
5. ``cross_entropy_forward_kernel``: one thread per row: max, log-sum-exp, the row's loss.
   The host averages the B losses (a fixed order: the same bits every run).
Backward
6. ``cross_entropy_backward_kernel``: one thread per logit: (softmax - onehot) / B, the
   softmax recomputed from the row's max and sum (one thread per row first: 5's statistics).
7. ``column_sum_kernel``: one thread per column, the biases' gradients in a fixed order.
8. ``dropout_tanh_backward_kernel``: one thread per unit: dh from the same bit and scale,
   dhln = dh * (1 - h^2), from tanh's output.
9. ``layernorm_backward_kernel``: one thread per row: the two row means, then dhpre;
   ``layernorm_param_kernel``: one thread per unit for dgamma and dbeta.
10. ``embedding_backward_kernel``: one thread per (position, channel), ``cuda.atomic.add``
   into dE's row idx: positions that share an id add into the same address, and only an
   atomic keeps every contribution (a plain += loses them: the embedding-overwrite trap in
   hardware). The order of the atomics varies, so dE's last bits may vary run to run on a
   GPU; the tied output gradient is written first, so dE is the sum of both paths.
11. ``embedding_backward_gather_kernel``: the deterministic alternative, one thread per (id,
   channel) that walks every position in a fixed order and adds those naming its id: the same
   bits every run, at V times the reads (llm.c's encoder backward sorts positions by id instead).

Run the tests under the simulator (no GPU needed), on a GPU with BACKPROP_TRAPS_REAL_GPU=1:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_backprop_ninja_kernels.py
Check and time it: python -m backprop_traps.kernels.backprop_ninja (from any folder) runs every
kernel on the benchmark's tiny cases (kernels/cases/backprop_ninja.py: a whole step of the
solution) in float64 and float32 against the solution notebook, and times them. The launchers
(``*_device``) take device arrays and only launch (their grids are what the dry run checks).

Shapes: B examples, T tokens each, V vocabulary, C channels, H hidden units; float64
throughout (the host functions allocate float64, the kernels' constants are float64).
idx (B, T) int64; E (V, C); W1 (T*C, H); W2 (H, C).
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.backprop_ninja: no GPU? the simulator, before numba loads
    from backprop_traps.kernels.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import math

import numpy as np

from backprop_traps.kernels.device import cuda

THREADS = 64


def launch(n: int, threads: int = THREADS) -> tuple[int, int]:
    """(blocks, threads) covering n threads; at least one block."""
    return max(1, math.ceil(n / threads)), threads


# 1. the embedding's gather -------------------------------------------------------------------
@cuda.jit
def embedding_forward_kernel(idx, E, emb):
    # idx: B, T; E: V, C; emb: B, T, C (written)
    i = cuda.grid(1)
    n_tokens, channels = idx.shape[0] * idx.shape[1], E.shape[1]
    if i < n_tokens * channels:
        pos, c = i // channels, i % channels
        b, t = pos // idx.shape[1], pos % idx.shape[1]
        emb[b, t, c] = E[idx[b, t], c]


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
        m = 0.0
        for j in range(units):
            m += hpre[row, j]
        m /= units
        var = 0.0
        for j in range(units):
            d = hpre[row, j] - m
            var += d * d
        r = 1.0 / math.sqrt(var / units + eps)  # biased variance, eps inside the root
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
    # hln: B, H; keep_bits: ceil(B*H / 8) uint8; scale = 1 / (1 - p); h, hdrop: B, H (written)
    i = cuda.grid(1)
    if i < hln.size:
        row, j = i // hln.shape[1], i % hln.shape[1]
        t = math.tanh(hln[row, j])
        h[row, j] = t
        hdrop[row, j] = t * scale if kept(keep_bits, i) else 0.0


# 5. softmax cross-entropy, one row per thread -------------------------------------------------
@cuda.jit
def cross_entropy_forward_kernel(logits, targets, row_max, row_sum, losses):
    # logits: B, V; targets: B; row_max, row_sum, losses: B (written)
    row = cuda.grid(1)
    if row < logits.shape[0]:
        m = logits[row, 0]
        for v in range(1, logits.shape[1]):
            m = max(m, logits[row, v])
        s = 0.0
        for v in range(logits.shape[1]):
            s += math.exp(logits[row, v] - m)  # every term <= 1: no overflow
        row_max[row], row_sum[row] = m, s
        losses[row] = math.log(s) + m - logits[row, targets[row]]


# 6. softmax cross-entropy's backward ---------------------------------------------------------
@cuda.jit
def cross_entropy_backward_kernel(logits, targets, row_max, row_sum, dlogits):
    # logits: B, V; targets: B; row_max, row_sum: B (from 5); dlogits: B, V (written)
    i = cuda.grid(1)
    if i < logits.size:
        row, v = i // logits.shape[1], i % logits.shape[1]
        p = math.exp(logits[row, v] - row_max[row]) / row_sum[row]
        if v == targets[row]:
            p -= 1.0
        dlogits[row, v] = p / logits.shape[0]  # the loss is the batch mean


# 7. a bias's gradient: a column sum in a fixed order ------------------------------------------
@cuda.jit
def column_sum_kernel(grad, out):
    # grad: M, N; out: N (written)
    col = cuda.grid(1)
    if col < grad.shape[1]:
        acc = 0.0
        for row in range(grad.shape[0]):
            acc += grad[row, col]
        out[col] = acc


# 8. dropout and tanh, backward, fused ---------------------------------------------------------
@cuda.jit
def dropout_tanh_backward_kernel(dhdrop, keep_bits, scale, h, dh, dhln):
    # dhdrop, h: B, H; keep_bits, scale: as 4's; dh, dhln: B, H (written)
    i = cuda.grid(1)
    if i < h.size:
        row, j = i // h.shape[1], i % h.shape[1]
        g = dhdrop[row, j] * scale if kept(keep_bits, i) else 0.0  # the same mask, the same scale
        dh[row, j] = g
        t = h[row, j]
        dhln[row, j] = g * (1.0 - t * t)  # tanh' from tanh's output


# 9. LayerNorm's backward ---------------------------------------------------------------------
@cuda.jit
def layernorm_backward_kernel(dhln, gamma, xhat, rstd, dhpre):
    # dhln, xhat: B, H; gamma: H; rstd: B; dhpre: B, H (written)
    row = cuda.grid(1)
    if row < dhln.shape[0]:
        units = dhln.shape[1]
        mean_g, mean_gx = 0.0, 0.0
        for j in range(units):
            g = dhln[row, j] * gamma[j]
            mean_g += g
            mean_gx += g * xhat[row, j]
        mean_g /= units
        mean_gx /= units
        for j in range(units):
            dhpre[row, j] = rstd[row] * (dhln[row, j] * gamma[j] - mean_g - xhat[row, j] * mean_gx)


@cuda.jit
def layernorm_param_kernel(dhln, xhat, dgamma, dbeta):
    # dhln, xhat: B, H; dgamma, dbeta: H (written), summed over the batch in a fixed order
    j = cuda.grid(1)
    if j < dhln.shape[1]:
        acc_gamma, acc_beta = 0.0, 0.0
        for row in range(dhln.shape[0]):
            acc_gamma += dhln[row, j] * xhat[row, j]
            acc_beta += dhln[row, j]
        dgamma[j], dbeta[j] = acc_gamma, acc_beta


# 10. the embedding's scatter-add ---------------------------------------------------------------
@cuda.jit
def embedding_backward_kernel(idx, demb, dE):
    # idx: B, T; demb: B, T, C; dE: V, C (added into: it already holds the output layer's part)
    i = cuda.grid(1)
    n_tokens, channels = idx.shape[0] * idx.shape[1], dE.shape[1]
    if i < n_tokens * channels:
        pos, c = i // channels, i % channels
        b, t = pos // idx.shape[1], pos % idx.shape[1]
        cuda.atomic.add(dE, (idx[b, t], c), demb[b, t, c])  # repeated ids share this address


# 11. the same scatter-add, deterministic: each (id, channel) gathers its positions in order -----
@cuda.jit
def embedding_backward_gather_kernel(idx, demb, dE):
    # idx: B, T; demb: B, T, C; dE: V, C (added into). One thread per (v, c) walks every position
    # in the same order and adds those that name v: no two threads share an address, so no
    # atomics, and the same bits on every run, for V * B * T reads instead of B * T.
    i = cuda.grid(1)
    if i < dE.size:
        v, c = i // dE.shape[1], i % dE.shape[1]
        acc = dE[v, c]
        for b in range(idx.shape[0]):
            for t in range(idx.shape[1]):
                if idx[b, t] == v:
                    acc += demb[b, t, c]
        dE[v, c] = acc


# launchers: device arrays in, launched ------------------------------------------------------------
# One thread per element, row or column, in 1-D grids of THREADS: past 2**31 - 1 blocks only
# beyond 1.3e11 threads, far more than 80 GB holds.
def embedding_forward_device(d_idx, d_E, d_emb):
    """Kernel 1: d_emb (B, T, C) = E[idx]."""
    embedding_forward_kernel[launch(d_emb.size)](d_idx, d_E, d_emb)


def matmul_device(d_A, d_W, d_bias, d_out):
    """Kernel 2: d_out (M, N) = A @ W + bias."""
    matmul_bias_kernel[launch(d_out.size)](d_A, d_W, d_bias, d_out)


def layernorm_forward_device(d_hpre, d_gamma, d_beta, eps, d_mean, d_rstd, d_xhat, d_hln):
    """Kernel 3: one thread per row of d_hpre (B, H)."""
    layernorm_forward_kernel[launch(d_hpre.shape[0])](d_hpre, d_gamma, d_beta, float(eps), d_mean, d_rstd,
                                                     d_xhat, d_hln)


def tanh_dropout_forward_device(d_hln, d_keep_bits, scale, d_h, d_hdrop):
    """Kernel 4: d_h and d_hdrop (B, H), one thread per unit."""
    tanh_dropout_forward_kernel[launch(d_hln.size)](d_hln, d_keep_bits, float(scale), d_h, d_hdrop)


def cross_entropy_forward_device(d_logits, d_targets, d_row_max, d_row_sum, d_losses):
    """Kernel 5: the row statistics and losses (B,), one thread per row."""
    cross_entropy_forward_kernel[launch(d_logits.shape[0])](d_logits, d_targets, d_row_max, d_row_sum, d_losses)


def cross_entropy_backward_device(d_logits, d_targets, d_row_max, d_row_sum, d_dlogits):
    """Kernel 6: d_dlogits (B, V), one thread per logit."""
    cross_entropy_backward_kernel[launch(d_logits.size)](d_logits, d_targets, d_row_max, d_row_sum, d_dlogits)


def column_sum_device(d_grad, d_out):
    """Kernel 7: d_out (N,) = the column sums of d_grad (M, N), one thread per column."""
    column_sum_kernel[launch(d_grad.shape[1])](d_grad, d_out)


def dropout_tanh_backward_device(d_dhdrop, d_keep_bits, scale, d_h, d_dh, d_dhln):
    """Kernel 8: d_dh and d_dhln (B, H), one thread per unit."""
    dropout_tanh_backward_kernel[launch(d_h.size)](d_dhdrop, d_keep_bits, float(scale), d_h, d_dh, d_dhln)


def layernorm_backward_device(d_dhln, d_gamma, d_xhat, d_rstd, d_dhpre, d_dgamma, d_dbeta):
    """Kernel 9: d_dhpre (B, H), one thread per row; then dgamma and dbeta (H,), one per unit."""
    layernorm_backward_kernel[launch(d_dhln.shape[0])](d_dhln, d_gamma, d_xhat, d_rstd, d_dhpre)
    layernorm_param_kernel[launch(d_dhln.shape[1])](d_dhln, d_xhat, d_dgamma, d_dbeta)


def embedding_backward_device(d_idx, d_demb, d_dE, deterministic=False):
    """Kernel 10 (atomic scatter, one thread per (position, channel)) or, ``deterministic``,
    kernel 11 (one thread per (id, channel)): adds demb into d_dE (V, C)."""
    if deterministic:
        embedding_backward_gather_kernel[launch(d_dE.size)](d_idx, d_demb, d_dE)
    else:
        embedding_backward_kernel[launch(d_demb.size)](d_idx, d_demb, d_dE)


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


def random_problem(rng, B, T, V, C, H, p_drop=0.25):
    """A model and a batch with repeated ids, for validation and timing."""
    params = {"E": rng.normal(size=(V, C)), "W1": rng.normal(size=(T * C, H)) / math.sqrt(T * C),
              "b1": rng.normal(size=H), "gamma": rng.normal(size=H), "beta": rng.normal(size=H),
              "W2": rng.normal(size=(H, C)) / math.sqrt(H), "b2": rng.normal(size=C)}
    idx = rng.integers(0, max(1, V // 2), size=(B, T))  # half the vocabulary: ids repeat
    targets = rng.integers(0, V, size=B)
    keep_bits = np.packbits(rng.random(B * H) >= p_drop)
    return params, idx, targets, keep_bits, p_drop


if __name__ == "__main__":  # check every kernel against the solution and time it: kernels/self_check.py
    import sys
    from backprop_traps.kernels.self_check import main
    sys.exit(main("backprop_ninja"))
