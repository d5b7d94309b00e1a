"""Cases for kernels/training_symptoms.py: the gated block's forward (question 21's
hidden-activation kernel, then ``gated_output_kernel``: f = a @ W2 kept, out = h + gain * f)
and its backward from ``dout`` (the gain's column sums, dout * gain, question 21's dz, dh and
weight-gradient kernels).

The products are plain loops, written to be read, so flops say more than bytes and their
times compare with PyTorch's cuBLAS products for scale, not parity. TINY keeps a simulated
launch near 50 threads; LARGE is N = 8192 rows, D = 512, H = 2048 (16 MB per (N, D) fp32
array); HUGE fills an 80 GB GPU with rows, and with hidden units (W1 and W2 of 1.2 GB each).
The backward reads the forward's a and f, made on the host beforehand. PyTorch's
counterparts: ``h + gain * (relu(h @ W1) @ W2)`` and autograd through it (which re-runs the
forward: its time includes one). Shape letters as in the kernel module: N rows, D channels,
H hidden units. Version 2 (tiled products, the gain's gradient and dout * gain in one
128-bit pass, its parts added a warp a channel) has a case per op beside version 1's, on the
same arrays; it reads 4 channels at a time, so TINY's D is 8. Its scratch (the gain's partials,
split-K's) is made beforehand and not counted as moved bytes.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, solution

TINY = (4, 8, 6)          # N, D, H
LARGE = (8192, 512, 2048)
HUGE = ((1_600_000, 512, 2048), (8192, 512, 600_000))


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels.common import tiled_matmul
    from backprop_traps.kernels import training_symptoms as ts, training_symptoms_v2 as ts2
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("training_symptoms")
    N, D, H = shape

    def fill(rng):
        h = rng.standard_normal((N, D)).astype(dtype)                              # N, D
        W1 = (rng.standard_normal((D, H)) * np.sqrt(2.0 / D)).astype(dtype)        # D, H
        W2 = (rng.standard_normal((H, D)) / np.sqrt(H)).astype(dtype)              # H, D
        a = np.maximum(h.astype(np.float64) @ W1.astype(np.float64), 0.0).astype(dtype)  # N, H: the forward's
        return {"h": h, "W1": W1, "W2": W2, "gain": rng.uniform(-0.5, 0.5, size=D).astype(dtype),
                "dout": rng.standard_normal((N, D)).astype(dtype), "a": a,
                "f": (a.astype(np.float64) @ W2.astype(np.float64)).astype(dtype)}

    host = arrays.make({"h": ((N, D), dtype), "W1": ((D, H), dtype), "W2": ((H, D), dtype), "gain": (D, dtype),
                        "dout": ((N, D), dtype), "a": ((N, H), dtype), "f": ((N, D), dtype)}, fill)
    h, W1, W2, gain, dout = host.h, host.W1, host.W2, host.gain, host.dout
    d_h, d_W1, d_W2, d_gain, d_dout, d_a_saved, d_f_saved = (cuda.to_device(x) for x in (
        h, W1, W2, gain, dout, host.a, host.f))
    d_a, d_dz = (cuda.device_array((N, H), dtype=dtype) for _ in range(2))
    d_f, d_out, d_g, d_dh = (cuda.device_array((N, D), dtype=dtype) for _ in range(4))
    d_dW1, d_dW2 = cuda.device_array((D, H), dtype=dtype), cuda.device_array((H, D), dtype=dtype)
    d_dgain = cuda.device_array(D, dtype=dtype)
    d_partials = cuda.device_array((ts2.gain_parts(N), D), dtype=dtype)                      # version 2's
    d_parts1, d_parts2 = tiled_matmul.scratch(D, H, N, dtype), tiled_matmul.scratch(H, D, N, dtype)
    as64 = lambda: [x.astype(np.float64) for x in (h, W1, W2, gain, dout)]

    def expected_forward():
        h64, W1_64, W2_64, gain64, _ = as64()
        return {"out": ref.gated_block_forward(h64, W1_64, W2_64, gain64)}

    def expected_backward():
        h64, W1_64, W2_64, gain64, dout64 = as64()
        return dict(zip(("dh", "dW1", "dW2", "dgain"), ref.gated_block_backward(dout64, h64, W1_64, W2_64, gain64)))

    def torch_block(device):
        import torch
        h_t, W1_t, W2_t, gain_t, dout_t = on_torch(device, h, W1, W2, gain, dout)

        def backward_t():
            leaves = [t.detach().clone().requires_grad_() for t in (h_t, W1_t, W2_t, gain_t)]
            (leaves[0] + leaves[3] * (torch.relu(leaves[0] @ leaves[1]) @ leaves[2])).backward(dout_t)
            return dict(zip(("dh", "dW1", "dW2", "dgain"), (leaf.grad for leaf in leaves)))
        return {"forward": lambda: {"out": h_t + gain_t * (torch.relu(h_t @ W1_t) @ W2_t)}, "backward": backward_t}

    def backward(version):
        if version == 1:
            ts.gated_backward_device(d_dout, d_h, d_a_saved, d_f_saved, d_W1, d_W2, d_gain,
                                     d_dgain, d_g, d_dz, d_dh, d_dW1, d_dW2)
        else:
            ts2.gated_backward_device(d_dout, d_h, d_a_saved, d_f_saved, d_W1, d_W2, d_gain, d_dgain, d_g, d_dz,
                                      d_dh, d_dW1, d_dW2, d_partials, d_parts1, d_parts2)

    cfg = f"N={N}, D={D}, H={H}"
    forward_reads = {"h": d_h, "W1": d_W1, "W2": d_W2, "gain": d_gain}
    forward_writes = {"a": d_a, "f": d_f, "out": d_out}
    backward_reads = {"dout": d_dout, "h": d_h, "a": d_a_saved, "f": d_f_saved, "W1": d_W1, "W2": d_W2, "gain": d_gain}
    backward_writes = {"dgain": d_dgain, "g": d_g, "dz": d_dz, "dh": d_dh, "dW1": d_dW1, "dW2": d_dW2}
    return [
        Case(f"gated block forward, h + gain * F(h) ({cfg})", forward_reads, forward_writes,
             lambda: ts.gated_forward_device(d_h, d_W1, d_W2, d_gain, d_a, d_f, d_out),
             expected_forward, lambda dev: torch_block(dev)["forward"], 4 * N * D * H),
        Case(f"gated block backward, the gain's gradient included ({cfg})", backward_reads, backward_writes,
             lambda: backward(1), expected_backward, lambda dev: torch_block(dev)["backward"], 8 * N * D * H),
        Case(f"gated block forward, v2: tiled products, the gain in the epilogue ({cfg})", forward_reads,
             forward_writes, lambda: ts2.gated_forward_device(d_h, d_W1, d_W2, d_gain, d_a, d_f, d_out),
             expected_forward, lambda dev: torch_block(dev)["forward"], 4 * N * D * H),
        Case(f"gated block backward, v2: tiled, dgain and dout * gain in one 128-bit pass ({cfg})",
             backward_reads, backward_writes, lambda: backward(2), expected_backward,
             lambda dev: torch_block(dev)["backward"], 8 * N * D * H),
    ]
