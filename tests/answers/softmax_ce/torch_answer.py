# question: softmax_ce
# A correct answer written with PyTorch's own ops: the test-only oracle must get full marks.
import numpy as np
import torch
import torch.nn.functional as F


def softmax_cross_entropy(logits, labels):
    x = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
    loss = F.cross_entropy(x, torch.from_numpy(labels))
    loss.backward()
    return loss.item(), x.grad.numpy()


def softmax_jacobian(z):
    return torch.func.jacrev(lambda v: torch.softmax(v, dim=0))(torch.tensor(z)).numpy()
