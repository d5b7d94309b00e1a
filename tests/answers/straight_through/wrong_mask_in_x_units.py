# question: straight_through
# expect: unnamed
# not named: no-clip
# The STE through torch.clamp, but the clamp is on x in its own units ([qmin, qmax]), not on
# x / scale: it clips, at the wrong place. With the checks' small scales it equals dout on their
# inputs, yet it is not the no-clip mistake (far beyond the range it blocks the gradient).
import numpy as np
import torch


def fake_quant_forward(x, scale, qmin, qmax):
    t = torch.from_numpy(np.asarray(x, dtype=np.float64))
    return (torch.clamp(torch.round(t / scale), qmin, qmax) * scale).numpy()


def fake_quant_backward(dout, x, scale, qmin, qmax):
    t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    u = t / scale
    q = torch.clamp(t + (torch.round(u) * scale - t).detach(), float(qmin), float(qmax))
    q.backward(torch.from_numpy(np.asarray(dout, dtype=np.float64)))
    return t.grad.numpy()
