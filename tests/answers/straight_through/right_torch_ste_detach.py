# question: straight_through
# expect: full
# The STE trick: forward value from round, gradient from the clamp surrogate via autograd.
import numpy as np
import torch


def fake_quant_forward(x, scale, qmin, qmax):
    t = torch.from_numpy(np.asarray(x, dtype=np.float64))
    return (torch.clamp(torch.round(t / scale), qmin, qmax) * scale).numpy()


def fake_quant_backward(dout, x, scale, qmin, qmax):
    t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    u = t / scale
    q = torch.clamp(u + (torch.round(u) - u).detach(), float(qmin), float(qmax)) * scale
    q.backward(torch.from_numpy(np.asarray(dout, dtype=np.float64)))
    return t.grad.numpy()
