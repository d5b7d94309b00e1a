"""Cases for kernels/bptt.py and kernels/bptt_v2.py: three ``Case`` objects: the forward (T launches, one per
step), the full backward (T launches in reverse, then the weight-gradient kernel), and
global-norm clipping of one flat gradient buffer (block sums of squares, then one scale; the
factor, which the host computes from the partial sums, is taken from the reference here so
that the timed launches need no copy back). The
launches are a host loop: a recurrence cannot start step t before step t - 1, so the time
includes T launch overheads, which is what a per-step RNN pays (cuDNN's persistent kernels
avoid it). TINY keeps a simulated launch at one 16 x 16 block; LARGE is T = 64 steps of a
256 x 512 state, 32 MB of hs in fp32; HUGE fills an 80 GB GPU with sequences, and with
16M inputs per step (past grid y's 65,535 tiles of 16). PyTorch's counterpart is
``torch.rnn_tanh``, the op ``nn.RNN`` calls, and autograd through it for the backward (which
re-runs the forward: its time includes one). Its weights go in as contiguous (H, D) and
(H, H) copies: cuDNN views them flat, and a transposed view fails on a GPU. Shape letters as in the kernel module: T steps, N sequences, D inputs,
H hidden units. Version 2 changes the clipping alone (its steps are version 1's): it has a
clipping case of its own, writing the same output, with its own partial sums.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, solution

TINY = (4, 2, 3, 4)          # T, N, D, H
LARGE = (64, 256, 512, 512)
HUGE = ((64, 98_000, 512, 512), (2, 16, 16_000_000, 64))


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import bptt, bptt_v2
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("bptt")
    T, N, D, H = shape
    P = 8 * H * (D + H)  # a flat gradient buffer: several layers' weights

    def fill(rng):
        made = {"x": rng.standard_normal((T, N, D)).astype(dtype),                       # T, N, D
                "h0": (0.5 * rng.standard_normal((N, H))).astype(dtype),                 # N, H
                "W_xh": (rng.standard_normal((D, H)) / np.sqrt(D)).astype(dtype),        # D, H
                "W_hh": (0.9 * np.linalg.qr(rng.standard_normal((H, H)))[0]).astype(dtype),  # H, H
                "b": (0.1 * rng.standard_normal(H)).astype(dtype),                       # H
                "dhs": rng.standard_normal((T, N, H)).astype(dtype)}                     # T, N, H
        made["hs64"] = ref.rnn_forward(*(made[k].astype(np.float64) for k in ("x", "h0", "W_xh", "W_hh", "b")))
        made["grads"] = rng.standard_normal(P).astype(dtype)
        max_norm = 0.5 * float(np.linalg.norm(made["grads"].astype(np.float64)))
        made["clipped64"], total = ref.clip_grad_norm([made["grads"].astype(np.float64)], max_norm)
        made["clipped64"] = made["clipped64"][0]
        made["factor"] = max_norm / total
        return made

    host = arrays.make({"x": ((T, N, D), dtype), "h0": ((N, H), dtype), "W_xh": ((D, H), dtype),
                        "W_hh": ((H, H), dtype), "b": (H, dtype), "dhs": ((T, N, H), dtype),
                        "hs64": ((T, N, H), np.float64), "grads": (P, dtype), "clipped64": (P, np.float64),
                        "factor": 0.5}, fill)
    x, h0, W_xh, W_hh, b, dhs, hs64 = host.x, host.h0, host.W_xh, host.W_hh, host.b, host.dhs, host.hs64
    as64 = lambda: [a.astype(np.float64) for a in (x, h0, W_xh, W_hh, b, dhs)]
    d_x, d_h0, d_Wxh, d_Whh, d_b, d_dhs = (cuda.to_device(a) for a in (x, h0, W_xh, W_hh, b, dhs))
    d_hs_in = cuda.to_device(hs64.astype(dtype))
    hs = cuda.device_array((T, N, H), dtype=dtype)
    dx, dzs = cuda.device_array((T, N, D), dtype=dtype), cuda.device_array((T, N, H), dtype=dtype)
    carries = [cuda.device_array((N, H), dtype=dtype) for _ in range(2)]
    dW_xh, dW_hh = cuda.device_array((D, H), dtype=dtype), cuda.device_array((H, H), dtype=dtype)
    db = cuda.device_array(H, dtype=dtype)
    zeros = cuda.to_device(np.zeros((N, H), dtype)) if not arrays.dry else cuda.device_array((N, H), dtype)

    def forward():
        for t in range(T):
            bptt.step_forward_device(d_x[t], d_h0 if t == 0 else hs[t - 1], d_Wxh, d_Whh, d_b, hs[t])

    def backward():
        carries[0].copy_to_device(zeros)
        for step, t in enumerate(reversed(range(T))):
            bptt.step_backward_device(d_dhs[t], carries[step % 2], d_hs_in[t], d_Wxh, d_Whh, 1, dzs[t], dx[t],
                                      carries[(step + 1) % 2])
        bptt.weight_grads_device(d_x, d_h0, d_hs_in, dzs, dW_xh, dW_hh, db)

    def expected_backward():
        x64, h064, Wxh64, Whh64, _, dhs64 = as64()
        grads = ref.rnn_backward(dhs64, x64, h064, hs64, Wxh64, Whh64, T)
        return {"dx": grads[0], "dW_xh": grads[2], "dW_hh": grads[3], "db": grads[4]}

    def torch_rnn(device):
        import torch
        x_t, h0_t, Wxh_t, Whh_t, b_t, dhs_t = on_torch(device, x, h0, W_xh, W_hh, b, dhs)
        w_ih, w_hh = Wxh_t.T.contiguous(), Whh_t.T.contiguous()  # (H, D), (H, H): cuDNN views them flat
        zero_b = torch.zeros_like(b_t)

        def run(x_in, h0_in, w_ih_in, w_hh_in, b_ih):  # torch keeps (H, D) weights and two biases
            return torch.rnn_tanh(x_in, h0_in[None], [w_ih_in, w_hh_in, b_ih, zero_b], True, 1, 0.0,
                                  False, False, False)[0]

        def forward_t():
            return {"hs": run(x_t, h0_t, w_ih, w_hh, b_t)}

        def backward_t():
            leaves = [a.detach().clone().requires_grad_() for a in (x_t, w_ih, w_hh, b_t)]  # contiguous
            run(leaves[0], h0_t, leaves[1], leaves[2], leaves[3]).backward(dhs_t)
            return {"dx": leaves[0].grad, "dW_xh": leaves[1].grad.T, "dW_hh": leaves[2].grad.T,
                    "db": leaves[3].grad}
        return {"forward": forward_t, "backward": backward_t}

    grads = host.grads
    d_grads, d_clipped = cuda.to_device(grads), cuda.device_array(P, dtype=dtype)

    def clipping(version):  # the block sums, then the scale; each version's partial sums
        partials = cuda.device_array(version.reduce_blocks(P), dtype=dtype)

        def clip():
            version.sum_squares_device(d_grads, partials)
            version.scale_device(d_grads, host.factor, d_clipped)
        return clip, partials

    def torch_clip(device):
        import torch
        (g_t,) = on_torch(device, grads)
        max_norm = 0.5 * float(np.linalg.norm(grads.astype(np.float64)))

        def run():  # clip_grad_norm_'s own arithmetic, without its + 1e-6 (1e-7 off in float64)
            total_t = torch.linalg.vector_norm(g_t)
            return {"clipped": g_t * torch.clamp(max_norm / total_t, max=1.0)}
        return run

    cfg = f"T={T}, H={H}"
    return [  # the steps: version 1's kernels, which version 2 imports unchanged
        Case(f"rnn forward, one launch per step ({cfg})",
             {"x": d_x, "h0": d_h0, "W_xh": d_Wxh, "W_hh": d_Whh, "b": d_b}, {"hs": hs}, forward,
             lambda: {"hs": hs64}, lambda dev: torch_rnn(dev)["forward"]),
        Case(f"rnn backward through time, reversed steps + weight grads ({cfg})",
             {"dhs": d_dhs, "x": d_x, "h0": d_h0, "hs": d_hs_in, "W_xh": d_Wxh, "W_hh": d_Whh},
             {"dx": dx, "dW_xh": dW_xh, "dW_hh": dW_hh, "db": db}, backward, expected_backward,
             lambda dev: torch_rnn(dev)["backward"]),
    ] + [
        Case(f"global-norm clipping, block sums of squares + one scale{label} (P={P})",
             {"grads": d_grads}, {"clipped": d_clipped, "partials": partials}, clip,
             lambda: {"clipped": host.clipped64}, torch_clip)
        for (clip, partials), label in ((clipping(bptt), ""),
                                        (clipping(bptt_v2), ", v2: 4 a thread, 128-bit loads, a GPU of blocks"))
    ]
