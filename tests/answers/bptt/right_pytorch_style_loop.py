# question: bptt
# expect: full
# A right answer in the style of CS231n's rnn_layers.py: a step function and its backward,
# a loop over them, weight gradients added up; truncation as a detach every k steps.
import numpy as np


def rnn_step_forward(x, prev_h, Wx, Wh, b):
    next_h = np.tanh(x.dot(Wx) + prev_h.dot(Wh) + b)
    return next_h, (x, prev_h, Wx, Wh, next_h)


def rnn_step_backward(dnext_h, cache):
    x, prev_h, Wx, Wh, next_h = cache
    dz = dnext_h * (1 - next_h ** 2)
    return dz.dot(Wx.T), dz.dot(Wh.T), x.T.dot(dz), prev_h.T.dot(dz), dz.sum(axis=0)


def rnn_forward(x, h0, W_xh, W_hh, b):
    h, out = h0, []
    for t in range(x.shape[0]):
        h, _ = rnn_step_forward(x[t], h, W_xh, W_hh, b)
        out.append(h)
    return np.stack(out)


def rnn_backward(dhs, x, h0, hs, W_xh, W_hh, k):
    T = x.shape[0]
    dx = np.zeros_like(x)
    dWx, dWh, db = np.zeros_like(W_xh), np.zeros_like(W_hh), np.zeros(W_hh.shape[1])
    dprev = np.zeros_like(h0)
    for t in range(T - 1, -1, -1):
        prev = h0 if t == 0 else hs[t - 1]
        dx[t], dprev, dWx_t, dWh_t, db_t = rnn_step_backward(dhs[t] + dprev, (x[t], prev, W_xh, W_hh, hs[t]))
        dWx, dWh, db = dWx + dWx_t, dWh + dWh_t, db + db_t
        if t > 0 and t % k == 0:
            dprev = np.zeros_like(dprev)  # h detached at the start of this chunk
    return dx, dprev, dWx, dWh, db


def clip_grad_norm(grads, max_norm):
    total = np.linalg.norm(np.concatenate([g.ravel() for g in grads]))
    coef = min(1.0, max_norm / total)
    return [g * coef for g in grads], float(total)
