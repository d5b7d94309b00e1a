# question: residual_backward
# A correct answer written with PyTorch: the blocks as torch ops, autograd for the backward
# (torch.autograd.grad on every state at once), and torch.nn.init.calculate_gain for the scale.
import math

import numpy as np
import torch


def _run(x, weights, skip):
    states = [x]
    for W1, W2 in weights:
        branch = torch.relu(states[-1] @ W1) @ W2
        states.append(states[-1] + branch if skip else branch)
    return states


def residual_forward(x, weights, skip):
    with torch.no_grad():
        states = _run(torch.from_numpy(x), [tuple(map(torch.from_numpy, p)) for p in weights], skip)
    return torch.stack(states).numpy()


def residual_backward(dout, hs, weights, skip):
    ws = [tuple(torch.tensor(w, requires_grad=True) for w in p) for p in weights]
    x = torch.tensor(hs[0], requires_grad=True)
    states = _run(x, ws, skip)
    for s in states[1:-1]:
        s.retain_grad()
    states[-1].backward(torch.from_numpy(dout))
    dhs = [x.grad] + [s.grad for s in states[1:-1]] + [torch.from_numpy(dout)]
    return torch.stack(dhs).numpy(), [(W1.grad.numpy(), W2.grad.numpy()) for W1, W2 in ws]


def gradient_norms(dout, x, weights):
    out = []
    for skip in (True, False):
        dhs = torch.from_numpy(residual_backward(dout, residual_forward(x, weights, skip), weights, skip)[0])
        out.append(torch.linalg.vector_norm(dhs, dim=(1, 2)).numpy())
    return out[0], out[1]


def kaiming_std(shape, mode, negative_slope):
    fan_in, fan_out = shape  # torch's Linear keeps (out, in); ours is (in, out)
    gain = torch.nn.init.calculate_gain("leaky_relu", negative_slope)
    return gain / math.sqrt(fan_in if mode == "fan_in" else fan_out)
