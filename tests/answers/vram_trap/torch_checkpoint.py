# question: vram_trap
# A correct answer written with PyTorch: every segment of `segment_size` layers runs under
# torch.utils.checkpoint (non-reentrant), so autograd keeps only the segment inputs and
# recomputes each segment during the backward pass. It must get full marks.
import numpy as np
import torch
from torch.utils.checkpoint import checkpoint


def relu_forward_packed(z):
    positive = torch.from_numpy(z) > 0
    return np.maximum(z, 0.0), np.packbits(positive.numpy().ravel())


def relu_backward_packed(da, mask, shape):
    positive = np.unpackbits(mask, count=int(np.prod(shape))).reshape(shape).astype(bool)
    return torch.where(torch.from_numpy(positive), torch.from_numpy(da), 0.0).numpy()


def mlp_loss_and_grads(params, x, y, segment_size):
    weights = [(torch.tensor(W, requires_grad=True), torch.tensor(b, requires_grad=True))
               for W, b in params]
    last = len(weights) - 1

    def run_segment(start, stop):
        def segment(h):
            for i in range(start, stop):
                W, b = weights[i]
                h = torch.addmm(b, h, W)
                if i < last:
                    h = torch.relu(h)
            return h
        return segment

    h = torch.from_numpy(x)
    for start in range(0, len(weights), segment_size):
        stop = min(start + segment_size, len(weights))
        h = checkpoint(run_segment(start, stop), h, use_reentrant=False)
    loss = 0.5 * ((h - torch.from_numpy(y)) ** 2).sum() / x.shape[0]
    del h
    loss.backward()
    return loss.item(), [(W.grad.numpy(), b.grad.numpy()) for W, b in weights]
