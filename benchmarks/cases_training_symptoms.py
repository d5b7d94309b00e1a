"""Benchmark cases for kernels/training_symptoms.py, in the form of benchmarks/kernel_cases.py.

``cases(tiny, dtype, rng)`` returns two ``Case`` objects: the gated block's forward (question
21's hidden-activation kernel, then ``gated_output_kernel``: f = a @ W2 kept, out = h + gain * f)
and its backward from ``dout`` (the gain's column sums, dout * gain, question 21's dz, dh and
weight-gradient kernels). The products are plain loops, written to be read, so their times
compare with PyTorch's cuBLAS products for scale, not parity. TINY keeps a simulated launch
near 50 threads; LARGE is N = 8192 rows, D = 512, H = 2048 (16 MB per (N, D) fp32 array).
PyTorch's counterparts: ``h + gain * (relu(h @ W1) @ W2)`` and autograd through it (which
re-runs the forward: its time includes one). Shape letters as in the kernel module.
"""
from __future__ import annotations

import numpy as np

from benchmarks.kernel_cases import Case, on_torch

TINY = (4, 6, 8)          # N, D, H
LARGE = (8192, 512, 2048)


def cases(tiny: bool, dtype, rng) -> list:
    from numba import cuda
    from backprop_traps.grader.loading.reference import load_solution
    from backprop_traps.kernels import residual_backward as rb
    from backprop_traps.kernels import training_symptoms as ts
    ref = load_solution("training_symptoms")
    dtype = np.dtype(dtype)
    N, D, H = TINY if tiny else LARGE
    h = rng.standard_normal((N, D)).astype(dtype)                              # N, D
    W1 = (rng.standard_normal((D, H)) * np.sqrt(2.0 / D)).astype(dtype)        # D, H
    W2 = (rng.standard_normal((H, D)) / np.sqrt(H)).astype(dtype)              # H, D
    gain = rng.uniform(-0.5, 0.5, size=D).astype(dtype)                        # D
    dout = rng.standard_normal((N, D)).astype(dtype)                           # N, D
    as64 = [a.astype(np.float64) for a in (h, W1, W2, gain, dout)]
    d_h, d_W1, d_W2, d_gain, d_dout = (cuda.to_device(a.ravel()) for a in (h, W1, W2, gain, dout))
    d_a, d_dz = cuda.device_array(N * H, dtype=dtype), cuda.device_array(N * H, dtype=dtype)
    d_f, d_out, d_g, d_dh = (cuda.device_array(N * D, dtype=dtype) for _ in range(4))
    d_dW1, d_dW2 = cuda.device_array(D * H, dtype=dtype), cuda.device_array(H * D, dtype=dtype)
    d_dgain = cuda.device_array(D, dtype=dtype)
    zero, one = dtype.type(0), dtype.type(1)
    T = rb.THREADS

    def forward():
        rb.hidden_forward_kernel[rb._blocks(N * H), T](d_h, d_W1, d_a, N, D, H, zero)
        ts.gated_output_kernel[rb._blocks(N * D), T](d_h, d_a, d_W2, d_gain, d_f, d_out, N, D, H, zero)

    forward()  # the backward reads a and f

    def backward():
        ts.gain_grad_kernel[rb._blocks(D), T](d_dout, d_f, d_dgain, N, D, zero)
        ts.scale_rows_kernel[rb._blocks(N * D), T](d_dout, d_gain, d_g, N, D)
        rb.hidden_backward_kernel[rb._blocks(N * H), T](d_g, d_a, d_W2, d_dz, N, D, H, zero)
        rb.input_backward_kernel[rb._blocks(N * D), T](d_dout, d_dz, d_W1, d_dh, N, D, H, one)
        rb.weight_grad_kernel[rb._blocks(D * H), T](d_h, d_dz, d_dW1, N, D, H, zero)
        rb.weight_grad_kernel[rb._blocks(H * D), T](d_a, d_g, d_dW2, N, H, D, zero)

    def expected_forward():
        return {"out": ref.gated_block_forward(*as64[:4]).ravel()}

    def expected_backward():
        dh, dW1, dW2, dgain = ref.gated_block_backward(as64[4], *as64[:4])
        return {"dh": dh.ravel(), "dW1": dW1.ravel(), "dW2": dW2.ravel(), "dgain": dgain}

    def torch_block(device):
        import torch
        h_t, W1_t, W2_t, gain_t, dout_t = on_torch(device, h, W1, W2, gain, dout)

        def forward_t():
            return {"out": (h_t + gain_t * (torch.relu(h_t @ W1_t) @ W2_t)).reshape(-1)}

        def backward_t():
            leaves = [t.detach().clone().requires_grad_() for t in (h_t, W1_t, W2_t, gain_t)]
            (leaves[0] + leaves[3] * (torch.relu(leaves[0] @ leaves[1]) @ leaves[2])).backward(dout_t)
            return {"dh": leaves[0].grad.reshape(-1), "dW1": leaves[1].grad.reshape(-1),
                    "dW2": leaves[2].grad.reshape(-1), "dgain": leaves[3].grad}
        return {"forward": forward_t, "backward": backward_t}

    cfg = f"N={N}, D={D}, H={H}"
    return [
        Case(f"gated block forward, h + gain * F(h) ({cfg})", {"h": d_h, "W1": d_W1, "W2": d_W2, "gain": d_gain},
             {"a": d_a, "f": d_f, "out": d_out}, forward, expected_forward,
             lambda dev: torch_block(dev)["forward"], 4 * N * D * H),
        Case(f"gated block backward, the gain's gradient included ({cfg})",
             {"dout": d_dout, "h": d_h, "a": d_a, "f": d_f, "W1": d_W1, "W2": d_W2, "gain": d_gain},
             {"dgain": d_dgain, "g": d_g, "dz": d_dz, "dh": d_dh, "dW1": d_dW1, "dW2": d_dW2}, backward,
             expected_backward, lambda dev: torch_block(dev)["backward"], 8 * N * D * H),
    ]
