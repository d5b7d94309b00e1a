# question: bptt
# A correct answer written with PyTorch: torch.nn.RNN's own cell, autograd through the
# sequence with h detached every k steps, and torch.nn.utils.clip_grad_norm_.
import numpy as np
import torch


def _rnn(input_size, W_xh, W_hh, b):
    rnn = torch.nn.RNN(input_size, W_hh.shape[0], nonlinearity="tanh", dtype=torch.float64)
    with torch.no_grad():  # torch keeps W (H, D) and two biases: ours are their transposes
        rnn.weight_ih_l0.copy_(W_xh.T)
        rnn.weight_hh_l0.copy_(W_hh.T)
        rnn.bias_ih_l0.copy_(b)
        rnn.bias_hh_l0.zero_()
    return rnn


def rnn_forward(x, h0, W_xh, W_hh, b):
    W_xh, W_hh, b = (torch.from_numpy(a) for a in (W_xh, W_hh, b))
    with torch.no_grad():
        hs, _ = _rnn(x.shape[2], W_xh, W_hh, b)(torch.from_numpy(x), torch.from_numpy(h0)[None])
    return hs.numpy()


def rnn_backward(dhs, x, h0, hs, W_xh, W_hh, k):
    T = x.shape[0]
    rnn = _rnn(x.shape[2], *(torch.from_numpy(a) for a in (W_xh, W_hh, np.zeros(W_hh.shape[0]))))
    with torch.no_grad():  # recover b from the saved states: tanh^-1(h_0) - x_0 W_xh - h0 W_hh
        h_first = torch.from_numpy(hs[0])
        b = (torch.atanh(h_first) - torch.from_numpy(x[0] @ W_xh + h0 @ W_hh)).mean(0)
        rnn.bias_ih_l0.copy_(b)
    x_t = torch.from_numpy(x).requires_grad_()
    h = h0_t = torch.from_numpy(h0).clone().requires_grad_()
    outs = []
    for start in range(0, T, k):
        if start > 0:
            h = h.detach()
        out, h_last = rnn(x_t[start:start + k], h[None])
        outs.append(out)
        h = h_last[0]
    torch.cat(outs).backward(torch.from_numpy(dhs))
    return (x_t.grad.numpy(), h0_t.grad.numpy(), rnn.weight_ih_l0.grad.T.numpy().copy(),
            rnn.weight_hh_l0.grad.T.numpy().copy(), rnn.bias_ih_l0.grad.numpy())


def clip_grad_norm(grads, max_norm):
    params = [torch.nn.Parameter(torch.zeros(g.shape, dtype=torch.float64)) for g in grads]
    for p, g in zip(params, grads):
        p.grad = torch.tensor(g)
    total = torch.nn.utils.clip_grad_norm_(params, max_norm)
    return [p.grad.numpy() for p in params], float(total)
