# question: vram_trap
# Trap stores-everything, hidden from tracemalloc: plain autograd keeps every layer's
# activations alive inside torch tensors (allocated outside Python's tracked heap) until
# the backward pass. The gradients are right; only the resident-memory peak gives it away.
import numpy as np
import torch


def relu_forward_packed(z):
    return np.maximum(z, 0.0), np.packbits((z > 0).ravel())


def relu_backward_packed(da, mask, shape):
    positive = np.unpackbits(mask, count=int(np.prod(shape))).reshape(shape).astype(bool)
    return np.where(positive, da, 0.0)


def mlp_loss_and_grads(params, x, y, segment_size):
    weights = [(torch.tensor(W, requires_grad=True), torch.tensor(b, requires_grad=True))
               for W, b in params]
    h = torch.from_numpy(x)
    for i, (W, b) in enumerate(weights):
        h = torch.addmm(b, h, W)
        if i < len(weights) - 1:
            h = torch.relu(h)
    loss = 0.5 * ((h - torch.from_numpy(y)) ** 2).sum() / x.shape[0]
    del h
    loss.backward()
    return loss.item(), [(W.grad.numpy(), b.grad.numpy()) for W, b in weights]
