"""Cases for kernels/softmax_ce.py: the fused softmax + cross-entropy, out of place and in place.

TINY is two rows of 37 classes; LARGE is 4,096 rows of 16,384 classes (256 MB of logits in
fp32); HUGE fills an 80 GB GPU with rows of 16,384 classes, and with rows of one class
(2.2e9 rows: more than CUDA's 2**31 - 1 blocks, so the kernel must stride over rows).
The in-place case overwrites its logits on every launch; later launches read gradients
instead of logits, which costs the same. Shape letters: N rows, K classes.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, solution

TINY = (2, 37)          # N, K
LARGE = (4096, 16384)
HUGE = ((400_000, 16384), (2_200_000_000, 1))


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import softmax_ce as sc
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("softmax_ce")
    N, K = shape
    host = arrays.make({"logits": ((N, K), dtype), "labels": (N, np.int64)},
                       lambda rng: {"logits": rng.uniform(-10, 10, size=(N, K)).astype(dtype),
                                    "labels": rng.integers(0, K, size=N).astype(np.int64)})
    logits, labels = host.logits, host.labels

    def expected():
        _, dlogits = ref.softmax_cross_entropy(logits, labels)
        losses = [ref.softmax_cross_entropy(logits[i:i + 1], labels[i:i + 1])[0] for i in range(N)]
        return {"losses": np.array(losses), "dlogits": dlogits}

    def torch_ce(device):
        import torch
        import torch.nn.functional as F
        logits_t, labels_t = on_torch(device, logits, labels)

        def run():  # reduction="none" so the per-row losses can be compared, then the mean
            lt = logits_t.detach().requires_grad_()
            losses = F.cross_entropy(lt, labels_t, reduction="none")
            return {"losses": losses.detach(), "dlogits": torch.autograd.grad(losses.mean(), lt)[0]}
        return run

    built = []
    for inplace in (False, True):
        d_logits, d_labels = cuda.to_device(logits), cuda.to_device(labels)
        d_losses = cuda.device_array(N, dtype=dtype)
        d_dlogits = d_logits if inplace else cuda.device_array((N, K), dtype=dtype)
        launch = lambda lg=d_logits, lb=d_labels, ls=d_losses, dl=d_dlogits: sc.fused_device(lg, lb, ls, dl)
        built.append(Case(f"cross-entropy fwd+bwd fused{', in place' if inplace else ''} (K={K})",
                          {"logits": d_logits, "labels": d_labels},
                          {"losses": d_losses, "dlogits": d_dlogits}, launch, expected, torch_ce))
    return built
