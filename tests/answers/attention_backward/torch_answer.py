# question: attention_backward
# A correct answer written with PyTorch (CPU), complete on its own: PyTorch's fused CPU
# FlashAttention kernels, which return the output and each row's log-sum-exp, and whose
# backward takes them back. Our (B, N, d) is their (batch, heads, N, d) with one head; their
# logsumexp is ours (natural log, scaled scores). It must get full marks, memory included.
import numpy as np
import torch

FLASH = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
FLASH_BACKWARD = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward


def heads(*arrays):
    return [torch.from_numpy(np.ascontiguousarray(a))[:, None] for a in arrays]  # B, 1, N, d


def attention_forward(q, k, v, causal):
    o, lse = FLASH(*heads(q, k, v), 0.0, bool(causal))
    return o[:, 0].numpy().copy(), lse[:, 0].numpy().copy()


def attention_backward(do, q, k, v, o, lse, causal):
    lse_t = torch.from_numpy(np.ascontiguousarray(lse))[:, None]  # B, 1, N
    grads = FLASH_BACKWARD(*heads(do, q, k, v, o), lse_t, 0.0, bool(causal))
    return tuple(g[:, 0].numpy().copy() for g in grads)
