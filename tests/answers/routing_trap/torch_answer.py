# question: routing_trap
# A correct answer written with PyTorch's own ops: the test-only oracle must get full marks.
import numpy as np
import torch
import torch.nn.functional as F


def maxpool2d_forward(x, kernel_size, stride):
    out, idx = F.max_pool2d(torch.from_numpy(x), kernel_size, stride, return_indices=True)
    return out.numpy(), idx.numpy().astype(np.int64)


def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):
    n, c, h, w = input_shape
    dx = torch.zeros(n, c, h * w, dtype=torch.float64)
    dx.scatter_add_(2, torch.from_numpy(argmax).reshape(n, c, -1),
                    torch.from_numpy(dout).reshape(n, c, -1))
    return dx.reshape(input_shape).numpy()


def avgpool2d_forward(x, kernel_size, stride):
    return F.avg_pool2d(torch.from_numpy(x), kernel_size, stride).numpy()


def avgpool2d_backward(dout, input_shape, kernel_size, stride):
    x = torch.zeros(tuple(input_shape), dtype=torch.float64, requires_grad=True)
    F.avg_pool2d(x, kernel_size, stride).backward(torch.from_numpy(dout))
    return x.grad.numpy()
