"""Benchmark cases for kernels/backprop_ninja.py, in the form of benchmarks/kernel_cases.py.

``cases(tiny, dtype, rng)`` returns the three kernels of the step that are about memory, not
arithmetic (the naive matrix products are left out: a GEMM library is the tool there):

- the embedding's backward, an atomic scatter-add of demb (B*T, C) into dE (V, C), which
  already holds the output layer's gradient (the tied matrix); every timed launch adds again,
  at the same cost. PyTorch's counterpart is ``index_add``;
- tanh fused with inverted dropout, forward: hln in, h and hdrop out, the mask read as bits;
- its backward: dhdrop, the bits and h in, dh and dhln out. PyTorch's counterparts unpack the
  mask into a float tensor first (not timed), then multiply.

At TINY the inputs come from a whole step of the solution notebook (a model with repeated
ids), so the expected values are the solution's own intermediates and gradients; LARGE has
2^18 tokens of 256 channels over a 50,304-token vocabulary (256 MB of demb in fp32) and
2^26 hidden units (256 MB per fp32 array). Shape letters as in the kernel module.
"""
from __future__ import annotations

import numpy as np

from benchmarks.kernel_cases import Case, on_torch

TINY = (3, 4, 7, 5, 6)                    # B, T, V, C, H
LARGE = (2 ** 12, 2 ** 6, 50304, 256, 2 ** 14)
P_DROP = 0.25


def cases(tiny: bool, dtype, rng) -> list:
    from numba import cuda
    from backprop_traps.grader.loading.reference import load_solution
    from backprop_traps.kernels import backprop_ninja as bn
    dtype = np.dtype(dtype)
    B, T, V, C, H = TINY if tiny else LARGE
    if tiny:  # one whole step of the solution: its intermediates and gradients are the answers
        ref = load_solution("backprop_ninja")
        params, idx, targets, keep_bits, _ = bn.random_problem(rng, B, T, V, C, H, P_DROP)
        _, cache = ref.ninja_forward(params, idx, targets, keep_bits, P_DROP, 1e-5)
        grads = ref.ninja_backward(params, cache, idx, targets, keep_bits, P_DROP)
        hln, h, dhdrop, demb = cache["hln"], cache["h"], grads["dhdrop"], grads["demb"]
        dE_output = grads["dlogits"].T @ cache["z"]  # V, C: the output layer's part of dE
    else:
        idx = rng.integers(0, V, size=(B, T))
        keep_bits = np.packbits(rng.random(B * H) >= P_DROP)
        hln, dhdrop = (rng.standard_normal((B, H), dtype=dtype) for _ in range(2))  # drawn in dtype:
        h, demb = np.tanh(hln), rng.standard_normal((B, T, C), dtype=dtype)        # no float64 copies
        dE_output = rng.standard_normal((V, C), dtype=dtype)
        cache = grads = None
    hln, h, dhdrop, demb, dE_output = (a.astype(dtype, copy=False) for a in (hln, h, dhdrop, demb, dE_output))
    d_idx, d_bits = cuda.to_device(np.ascontiguousarray(idx)), cuda.to_device(keep_bits)
    d_demb, dE = cuda.to_device(demb), cuda.to_device(dE_output)
    d_hln, d_dhdrop, d_h_in = cuda.to_device(hln), cuda.to_device(dhdrop), cuda.to_device(h)
    h_out, hdrop = cuda.device_array((B, H), dtype=dtype), cuda.device_array((B, H), dtype=dtype)
    dh, dhln = cuda.device_array((B, H), dtype=dtype), cuda.device_array((B, H), dtype=dtype)
    scale = 1.0 / (1.0 - P_DROP)

    def keep_float():
        return np.unpackbits(keep_bits, count=B * H).reshape(B, H).astype(dtype)

    def torch_embedding(device):
        import torch
        dE_t, demb_t, idx_t = on_torch(device, dE_output, demb, idx)
        return lambda: {"dE": dE_t.index_add(0, idx_t.reshape(-1), demb_t.reshape(-1, C))}

    def torch_forward(device):
        import torch
        hln_t, keep_t = on_torch(device, hln, keep_float())

        def run():
            h_t = torch.tanh(hln_t)
            return {"h": h_t, "hdrop": h_t * keep_t * scale}
        return run

    def torch_backward(device):
        dhdrop_t, h_t, keep_t = on_torch(device, dhdrop, h, keep_float())

        def run():
            dh_t = dhdrop_t * keep_t * scale
            return {"dh": dh_t, "dhln": dh_t * (1 - h_t * h_t)}
        return run

    return [
        Case(f"ninja: embedding backward, atomic scatter-add into the tied dE (V={V}, C={C})",
             {"idx": d_idx, "demb": d_demb}, {"dE": dE},
             lambda: bn.embedding_backward_kernel[bn.launch(demb.size)](d_idx, d_demb, dE),
             lambda: {"dE": grads["dE"]}, torch_embedding),
        Case(f"ninja: tanh + inverted dropout forward, mask as bits (H={H})",
             {"hln": d_hln, "keep_bits": d_bits}, {"h": h_out, "hdrop": hdrop},
             lambda: bn.tanh_dropout_forward_kernel[bn.launch(B * H)](d_hln, d_bits, scale, h_out, hdrop),
             lambda: {"h": cache["h"], "hdrop": cache["hdrop"]}, torch_forward),
        Case(f"ninja: dropout + tanh backward, mask as bits (H={H})",
             {"dhdrop": d_dhdrop, "keep_bits": d_bits, "h": d_h_in}, {"dh": dh, "dhln": dhln},
             lambda: bn.dropout_tanh_backward_kernel[bn.launch(B * H)](d_dhdrop, d_bits, scale, d_h_in, dh, dhln),
             lambda: {"dh": grads["dh"], "dhln": grads["dhln"]}, torch_backward),
    ]
