"""Cases for kernels/rmsnorm_rope_backward.py: RMSNorm's forward (one launch) and backward (the
one-pass kernel, then the per-feature sums of its partials), and RoPE's forward and backward
(one launch each, the same kernel turning either way).

Rows are tokens times heads of a head size D = 128 (Llama's), TINY a few hundred simulated
threads. LARGE moves 128 MB per (N, D) array in fp32; HUGE fills an 80 GB GPU with such rows
(19.5 GB per array, past 2**31 elements: the unsigned 64-bit offsets matter). Positions run
0, 7, 14, ... modulo a context of 4,096; RoPE's cos/sin tables (a line per distinct position)
are built once on the host, outside the timed launch, as a model keeps its cache. The RMSNorm
partial sums (G D values) and the tables are scratch, not counted in the bytes the op must
move. PyTorch's counterparts:
``F.rms_norm`` and its autograd backward; Hugging Face Llama's ``rotate_half`` RoPE and its
autograd backward. Shape letters: N rows, D features.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, solution

TINY = (4, 64)          # N, D
LARGE = (262144, 128)   # 128 MB per (N, D) array in fp32
HUGE = ((38_000_000, 128),)
EPS, BASE, CONTEXT = 1e-5, 10000.0, 4096


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import rmsnorm_rope_backward as k
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("rmsnorm_rope_backward")
    N, D = shape

    def fill(rng):
        x = (rng.uniform(-1, 1, size=(N, 1)) + rng.standard_normal((N, D))).astype(dtype)
        gamma, dy = rng.standard_normal(D).astype(dtype), rng.standard_normal((N, D)).astype(dtype)
        _, rstd = ref.rmsnorm_forward(x.astype(np.float64), gamma.astype(np.float64), EPS)
        pos = np.arange(N, dtype=np.int64) * 7 % CONTEXT
        index, cos, sin = k.rope_tables(pos, D, BASE, dtype)
        return {"x": x, "gamma": gamma, "dy": dy, "rstd": rstd, "pos": pos, "index": index, "cos": cos, "sin": sin}

    lines = min(N, CONTEXT)  # distinct positions
    host = arrays.make({"x": ((N, D), dtype), "gamma": (D, dtype), "dy": ((N, D), dtype), "rstd": (N, np.float64),
                        "pos": (N, np.int64), "index": (N, np.int64), "cos": ((lines, D // 2), dtype),
                        "sin": ((lines, D // 2), dtype)}, fill)
    x, gamma, dy, pos = host.x, host.gamma, host.dy, host.pos
    d_x, d_gamma, d_dy, d_index, d_cos, d_sin = (cuda.to_device(a) for a in (x, gamma, dy, host.index, host.cos, host.sin))
    d_rstd_in = cuda.to_device(host.rstd.astype(dtype))
    y, dx = (cuda.device_array((N, D), dtype=dtype) for _ in range(2))
    rstd, dgamma = cuda.device_array(N, dtype=dtype), cuda.device_array(D, dtype=dtype)
    partials = cuda.device_array((k.backward_blocks(N), D), dtype=dtype)
    as64 = lambda *a: [v.astype(np.float64) for v in a]

    def torch_ops(device):
        import torch
        import torch.nn.functional as F
        x_t, gamma_t, dy_t = on_torch(device, x, gamma, dy)
        index_t, cos_t, sin_t = on_torch(device, host.index, host.cos, host.sin)  # the same cache
        cos, sin = (torch.cat((t[index_t], t[index_t]), -1) for t in (cos_t, sin_t))  # N, D

        def rope(t):
            t1, t2 = t[:, : D // 2], t[:, D // 2:]
            return t * cos + torch.cat((-t2, t1), -1) * sin

        def grad_of(op, wrt):
            leaves = [w.detach().requires_grad_() for w in wrt]
            return torch.autograd.grad(op(*leaves), leaves, dy_t)

        return {"rms_forward": lambda: {"y": F.rms_norm(x_t, (D,), gamma_t, EPS),
                                        "rstd": torch.rsqrt(x_t.pow(2).mean(-1) + EPS)},
                "rms_backward": lambda: dict(zip(("dx", "dgamma"), grad_of(
                    lambda a, g: F.rms_norm(a, (D,), g, EPS), (x_t, gamma_t)))),
                "rope_forward": lambda: {"y": rope(x_t)},
                "rope_backward": lambda: {"dx": grad_of(rope, (x_t,))[0]}}

    return [
        Case(f"rmsnorm forward, one block a row (D={D})", {"x": d_x, "gamma": d_gamma}, {"y": y, "rstd": rstd},
             lambda: k.rmsnorm_forward_device(d_x, d_gamma, EPS, y, rstd),
             lambda: dict(zip(("y", "rstd"), ref.rmsnorm_forward(*as64(x, gamma), EPS))),
             lambda dev: torch_ops(dev)["rms_forward"]),
        Case(f"rmsnorm backward, one-pass + dgamma sums (D={D})",
             {"dy": d_dy, "x": d_x, "gamma": d_gamma, "rstd": d_rstd_in}, {"dx": dx, "dgamma": dgamma},
             lambda: k.rmsnorm_backward_device(d_dy, d_x, d_gamma, d_rstd_in, dx, partials, dgamma),
             lambda: dict(zip(("dx", "dgamma"), ref.rmsnorm_backward(*as64(dy, x, gamma), host.rstd))),
             lambda dev: torch_ops(dev)["rms_backward"]),
        Case(f"rope forward, a thread per pair (D={D})", {"x": d_x, "index": d_index}, {"y": y},
             lambda: k.rope_device(d_x, d_index, d_cos, d_sin, 1.0, y),
             lambda: {"y": ref.rope_forward(x.astype(np.float64), pos, BASE)},
             lambda dev: torch_ops(dev)["rope_forward"]),
        Case(f"rope backward, the same kernel by -theta (D={D})", {"dy": d_dy, "index": d_index}, {"dx": dx},
             lambda: k.rope_device(d_dy, d_index, d_cos, d_sin, -1.0, dx),
             lambda: {"dx": ref.rope_backward(dy.astype(np.float64), pos, BASE)},
             lambda dev: torch_ops(dev)["rope_backward"]),
    ]
