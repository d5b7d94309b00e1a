"""Cases for kernels/weight_tying.py: the tied model's forward (kernels 1-3: the lookup and the
hidden layer, the logits through E^T, softmax and each position's loss) and its backward
(kernels 4-7: dz, dW, dx, and dE with both reads' shares summed in one thread per entry).

The kernels are plain loops, written to be read: the products are naive, so flops say more
than bytes and their times compare with PyTorch's cuBLAS products for scale, not parity; the
softmax is one thread per row. TINY keeps a simulated launch near a hundred threads; LARGE is
a 32,768-token vocabulary, D = 512 and N = 2,048 positions (256 MB per (N, V) fp32 array).
HUGE fills an 80 GB GPU three ways: with the vocabulary (V = 1.4M), with positions (N = 180,000),
and with the width (D = 90,000: W and dW of 32 GB each). The backward reads the forward's x, h
and p, made on the host beforehand. PyTorch's counterparts: ``F.embedding``, ``tanh``, ``h @
E.T`` and ``softmax`` / ``cross_entropy``, and autograd through them with E a leaf read twice.
Shape letters as in the kernel module: V tokens, D features, N positions.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, solution

TINY = (13, 6, 9)            # V, D, N
LARGE = (32_768, 512, 2_048)
HUGE = ((1_400_000, 256, 4_096), (32_768, 512, 180_000), (4_096, 90_000, 2_048))


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import weight_tying as wt
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("weight_tying")
    V, D, N = shape

    def fill(rng):
        E = rng.standard_normal((V, D)).astype(dtype)                        # V, D
        W = (rng.standard_normal((D, D)) * 0.8 / np.sqrt(D)).astype(dtype)   # D, D
        ids = rng.integers(0, V, size=N)
        ids[-1] = ids[0]                                                     # a repeat, at any size
        targets = rng.integers(0, V, size=N)
        _, cache = ref.tied_lm_forward(E.astype(np.float64), W.astype(np.float64), ids, targets)
        return {"E": E, "W": W, "ids": ids, "targets": targets,
                **{k: cache[k].astype(dtype) for k in ("x", "h", "p")}}

    host = arrays.make({"E": ((V, D), dtype), "W": ((D, D), dtype), "ids": ((N,), np.int64),
                        "targets": ((N,), np.int64), "x": ((N, D), dtype), "h": ((N, D), dtype),
                        "p": ((N, V), dtype)}, fill)
    d_E, d_W, d_ids, d_targets, d_x_saved, d_h_saved, d_p_saved = (
        cuda.to_device(a) for a in (host.E, host.W, host.ids, host.targets, host.x, host.h, host.p))
    d_x, d_h, d_dz, d_dx = (cuda.device_array((N, D), dtype=dtype) for _ in range(4))
    d_logits, d_p = cuda.device_array((N, V), dtype=dtype), cuda.device_array((N, V), dtype=dtype)
    d_losses = cuda.device_array(N, dtype=dtype)
    d_dE, d_dW = cuda.device_array((V, D), dtype=dtype), cuda.device_array((D, D), dtype=dtype)

    def as64():
        return host.E.astype(np.float64), host.W.astype(np.float64)

    def expected_forward():
        E64, W64 = as64()
        _, cache = ref.tied_lm_forward(E64, W64, host.ids, host.targets)
        return {"x": cache["x"], "h": cache["h"], "p": cache["p"]}

    def expected_backward():
        E64, W64 = as64()
        cache = {k: getattr(host, k).astype(np.float64) for k in ("x", "h", "p")}
        dE, dW = ref.tied_lm_backward(E64, W64, cache, host.ids, host.targets)
        return {"dE": dE, "dW": dW}

    def torch_model(device):
        import torch
        E_t, W_t, ids_t, targets_t = on_torch(device, host.E, host.W, host.ids, host.targets)

        def forward_t():
            x_t = torch.nn.functional.embedding(ids_t, E_t)
            h_t = torch.tanh(x_t @ W_t)
            return {"x": x_t, "h": h_t, "p": torch.softmax(h_t @ E_t.T, dim=1)}

        def backward_t():
            E_g, W_g = E_t.detach().requires_grad_(), W_t.detach().requires_grad_()
            h_t = torch.tanh(torch.nn.functional.embedding(ids_t, E_g) @ W_g)
            torch.nn.functional.cross_entropy(h_t @ E_g.T, targets_t).backward()
            return {"dE": E_g.grad, "dW": W_g.grad}
        return {"forward": forward_t, "backward": backward_t}

    cfg = f"V={V}, D={D}, N={N}"
    forward_flops, backward_flops = 2 * N * D * (D + V), 2 * N * D * (2 * V + 2 * D)
    return [
        Case(f"tied LM forward: lookup, tanh, logits through E^T, softmax ({cfg})",
             {"E": d_E, "W": d_W, "ids": d_ids, "targets": d_targets},
             {"x": d_x, "h": d_h, "logits": d_logits, "p": d_p, "losses": d_losses},
             lambda: wt.forward_device(d_E, d_W, d_ids, d_targets, d_x, d_h, d_logits, d_p, d_losses),
             expected_forward, lambda dev: torch_model(dev)["forward"], forward_flops),
        Case(f"tied LM backward: dE sums the projection's and the lookup's shares, one thread an entry ({cfg})",
             {"E": d_E, "W": d_W, "ids": d_ids, "targets": d_targets, "x": d_x_saved, "h": d_h_saved,
              "p": d_p_saved},
             {"dz": d_dz, "dx": d_dx, "dE": d_dE, "dW": d_dW},
             lambda: wt.backward_device(d_E, d_W, d_ids, d_targets, d_x_saved, d_h_saved, d_p_saved,
                                        d_dz, d_dx, d_dE, d_dW),
             expected_backward, lambda dev: torch_model(dev)["backward"], backward_flops),
    ]
