# question: straight_through
# A correct answer written with PyTorch's own op, which has its own straight-through backward.
# Its mask is taken after rounding (round(x / scale) in [qmin, qmax]); the hidden checks keep
# their inputs out of the half steps just outside the range, where that differs from the
# notebook's mask on x / scale itself.
import numpy as np
import torch


def fake_quant_forward(x, scale, qmin, qmax):
    out = torch.fake_quantize_per_tensor_affine(torch.tensor(x), scale, 0, qmin, qmax)
    return out.numpy()


def fake_quant_backward(dout, x, scale, qmin, qmax):
    t = torch.tensor(x, requires_grad=True)
    torch.fake_quantize_per_tensor_affine(t, scale, 0, qmin, qmax).backward(torch.tensor(dout))
    return t.grad.numpy()
