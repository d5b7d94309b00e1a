"""Cases for kernels/attention_backward.py: the tiled forward and the tiled backward.

TINY (the simulator's smoke pass, float64 and float32 against the solution notebook) is
B = 2 heads of N = 37 tokens, d = 8: a partial tile, every simulated thread a Python thread.
LARGE is B = 32 heads (batch x heads) of N = 4096 tokens, d = 64, causal, as in a GPT layer:
q, k, v, o are 32 MiB each in fp32, and neither kernel allocates anything (N, N): the (N, N)
matrix of one head alone would be 64 MiB, 2 GiB for 32 heads. HUGE fills an 80 GB GPU with
heads of 64 tokens (500,000 heads: past grid y's 65,535) and with one head of 32M tokens.

The bytes model counts each array once (q, k, v read, o and lse written; the backward reads
do, q, k, v, o, lse and writes dq, dk, dv, plus its (B, N) scratch D, left out). These are
compute-bound kernels: the naive score loop reads each K/V tile from shared memory, so
GFLOP/s (flops: 4 B N^2 d for the forward, 14 B N^2 d for the backward's two passes, halved
when causal) says more than GB/s. PyTorch's counterpart is scaled_dot_product_attention
(its fused CUDA kernels), and autograd's backward through it with the graph kept.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, solution

TINY = (2, 37, 8, True)      # B, N, d, causal
LARGE = (32, 4096, 64, True)
HUGE = ((500_000, 64, 64, True), (1, 32_000_000, 64, True))


def large_kernels(dtype) -> dict:
    """The kernels LARGE launches, by name: the tiled kernels are compiled per (T, D), and
    the static compile (benchmarks/kernels_static.py) must see the size a GPU would run."""
    from backprop_traps.kernels import attention_backward as ab
    dtype = np.dtype(dtype)
    d = LARGE[2]
    return {f"{kernel.py_func.__name__} [T={ab.default_tile(d, dtype)}, d={d}]": kernel
            for kernel in ab._kernels(ab.default_tile(d, dtype), d, dtype)}


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import attention_backward as ab
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("attention_backward")
    B, N, d, causal = shape
    tiny = shape == TINY
    host = arrays.make({name: ((B, N, d), dtype) for name in ("q", "k", "v", "do")},
                       lambda rng: {name: rng.standard_normal((B, N, d)).astype(dtype)
                                    for name in ("q", "k", "v", "do")})
    q, k, v, do = host.q, host.k, host.v, host.do
    d_q, d_k, d_v, d_do = (cuda.to_device(a) for a in (q, k, v, do))
    d_o, d_lse = cuda.device_array((B, N, d), dtype=dtype), cuda.device_array((B, N), dtype=dtype)
    in_o, in_lse = cuda.device_array((B, N, d), dtype=dtype), cuda.device_array((B, N), dtype=dtype)
    d_rowdot = cuda.device_array((B, N), dtype=dtype)
    d_dq, d_dk, d_dv = (cuda.device_array((B, N, d), dtype=dtype) for _ in range(3))
    as64 = lambda: [a.astype(np.float64) for a in (q, k, v, do)]
    if tiny:  # the backward reads the reference's o and lse: it is checked on its own
        q64, k64, v64, _ = as64()
        o64, lse64 = ref.attention_forward(q64, k64, v64, causal)
        in_o.copy_to_device(o64.astype(dtype))
        in_lse.copy_to_device(lse64.astype(dtype))
    else:  # at this size numpy would take minutes: the forward kernel makes them, once
        ab.forward_device(d_q, d_k, d_v, causal, in_o, in_lse)
        o64 = lse64 = None

    def forward():
        ab.forward_device(d_q, d_k, d_v, causal, d_o, d_lse)

    def backward():
        ab.backward_device(d_do, d_q, d_k, d_v, in_o, in_lse, causal, d_rowdot, d_dq, d_dk, d_dv)

    def expected_forward():
        q64, k64, v64, _ = as64()
        o, lse = ref.attention_forward(q64, k64, v64, causal)
        return {"o": o, "lse": lse}

    def expected_backward():
        q64, k64, v64, do64 = as64()
        dq, dk, dv = ref.attention_backward(do64, q64, k64, v64, o64, lse64, causal)
        return {"dq": dq, "dk": dk, "dv": dv}

    def torch_forward(device):
        import torch.nn.functional as F
        q_t, k_t, v_t = on_torch(device, q, k, v)
        return lambda: {"o": F.scaled_dot_product_attention(q_t, k_t, v_t, is_causal=causal)}

    def torch_backward(device):
        import torch
        import torch.nn.functional as F
        q_t, k_t, v_t, do_t = on_torch(device, q, k, v, do)
        inputs = [t.requires_grad_() for t in (q_t, k_t, v_t)]
        out = F.scaled_dot_product_attention(*inputs, is_causal=causal)

        def run():  # the backward alone: the graph (and what it saved) is kept between runs
            dq, dk, dv = torch.autograd.grad(out, inputs, do_t, retain_graph=True)
            return {"dq": dq, "dk": dk, "dv": dv}
        return run

    work = B * N * N * d * (0.5 if causal else 1.0)
    cfg = f"B={B}, N={N}, d={d}{', causal' if causal else ''}"
    return [
        Case(f"attention forward, tiled online softmax ({cfg})", {"q": d_q, "k": d_k, "v": d_v},
             {"o": d_o, "lse": d_lse}, forward, expected_forward, torch_forward, int(4 * work)),
        Case(f"attention backward, P recomputed per tile ({cfg})",
             {"do": d_do, "q": d_q, "k": d_k, "v": d_v, "o": in_o, "lse": in_lse},
             {"dq": d_dq, "dk": d_dk, "dv": d_dv}, backward, expected_backward, torch_backward,
             int(14 * work)),
    ]
