"""Cases for kernels/moe_router_backward.py: the router's forward (logits = x Wr, the routing,
the expert statistics) and its backward (the gradient at the logits, dx and dWr).

TINY is 37 tokens of 16 features over 8 experts, k = 2; LARGE is 65,536 tokens of 1,024
features over 64 experts, k = 2 (256 MB of x in fp32); HUGE fills an 80 GB GPU: 6.5M tokens
(about 9 KB each: x and dx, three (N, E) arrays, the (N, k) ones). PyTorch's counterpart is the
same router written with torch.topk, softmax and autograd. Shape letters: N tokens, D
features, E experts, k slots.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, solution

TINY = (37, 16, 8, 2)          # N, D, E, k
LARGE = (65536, 1024, 64, 2)
HUGE = ((6_500_000, 1024, 64, 2),)
AUX_COEF = 0.01


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import moe_router_backward as mr
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("moe_router_backward")
    N, D, E, k = shape

    def fill(rng):
        x = rng.standard_normal((N, D)).astype(dtype)
        Wr = (rng.standard_normal((D, E)) / np.sqrt(D)).astype(dtype)
        logits = x.astype(np.float64) @ Wr.astype(np.float64)
        idx = np.argsort(-logits, axis=1, kind="stable")[:, :k].astype(np.int64)
        return {"x": x, "Wr": Wr, "dgates": rng.standard_normal((N, k)).astype(dtype), "idx": idx}

    host = arrays.make({"x": ((N, D), dtype), "Wr": ((D, E), dtype), "dgates": ((N, k), dtype),
                        "idx": ((N, k), np.int64)}, fill)
    x, Wr, dgates, idx = host.x, host.Wr, host.dgates, host.idx
    d_x, d_Wr, d_dgates, d_idx_in = (cuda.to_device(a) for a in (x, Wr, dgates, idx))
    d_logits, d_probs, d_dlogits = (cuda.device_array((N, E), dtype=dtype) for _ in range(3))
    d_gates, d_idx = cuda.device_array((N, k), dtype=dtype), cuda.device_array((N, k), dtype=np.int64)
    d_f, d_P = cuda.device_array(E, dtype=dtype), cuda.device_array(E, dtype=dtype)
    d_dx, d_dWr = cuda.device_array((N, D), dtype=dtype), cuda.device_array((D, E), dtype=dtype)
    as64 = lambda a: a.astype(np.float64)

    def expected_forward():
        gates, want_idx, _ = ref.router_forward(as64(x), as64(Wr), k, AUX_COEF)
        return {"gates": gates, "idx": want_idx}

    def expected_backward():
        dx, dWr = ref.router_backward(as64(dgates), as64(x), as64(Wr), idx, AUX_COEF)
        return {"dx": dx, "dWr": dWr}

    def torch_router(device):
        import torch
        x_t, Wr_t, dgates_t, idx_t = on_torch(device, x, Wr, dgates, idx)

        def loss(xg, Wg):
            logits = xg @ Wg
            gates = torch.softmax(torch.gather(logits, 1, idx_t), dim=1)
            f = torch.bincount(idx_t.reshape(-1), minlength=E).to(logits.dtype) / (N * k)
            aux = AUX_COEF * E * torch.sum(f * torch.softmax(logits, dim=1).mean(dim=0))
            return torch.sum(dgates_t * gates) + aux

        def forward_t():
            values, chosen = torch.topk(x_t @ Wr_t, k, dim=1)
            return {"gates": torch.softmax(values, dim=1), "idx": chosen}

        def backward_t():
            xg, Wg = x_t.detach().requires_grad_(), Wr_t.detach().requires_grad_()
            dx, dWr = torch.autograd.grad(loss(xg, Wg), (xg, Wg))
            return {"dx": dx, "dWr": dWr}
        return {"forward": forward_t, "backward": backward_t}

    flops = 2 * N * D * E
    return [
        Case(f"router forward: x Wr, top-{k} of {E}, f and P (N={N}, D={D})", {"x": d_x, "Wr": d_Wr},
             {"logits": d_logits, "probs": d_probs, "gates": d_gates, "idx": d_idx, "f": d_f, "P": d_P},
             lambda: mr.router_forward_device(d_x, d_Wr, k, d_logits, d_gates, d_idx, d_probs, d_f, d_P),
             expected_forward, lambda dev: torch_router(dev)["forward"], flops=flops),
        Case(f"router backward: dlogits, dx, dWr (N={N}, D={D}, E={E})",
             {"dgates": d_dgates, "x": d_x, "Wr": d_Wr, "idx": d_idx_in},
             {"logits": d_logits, "f": d_f, "dlogits": d_dlogits, "dx": d_dx, "dWr": d_dWr},
             lambda: mr.router_backward_device(d_dgates, d_x, d_Wr, d_idx_in, AUX_COEF, d_logits, d_f,
                                               d_dlogits, d_dx, d_dWr),
             expected_backward, lambda dev: torch_router(dev)["backward"], flops=3 * flops),
    ]
