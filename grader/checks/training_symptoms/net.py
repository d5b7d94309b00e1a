"""The network behind training_symptoms' runs: a small residual MLP classifier, in numpy.

``x (B, D0) -> h = x @ W_in -> blocks -> logits = h @ W_out (C classes)``; block l adds
``gain_l * relu(h @ W1_l) @ W2_l`` to the stream (its gain 1, or 0 for a block that starts as
the identity, ReZero's way). A network with BatchNorm normalises every block's pre-activation
and the stream before the head: with the batch's statistics in training mode (updating running
averages, momentum 0.1), with the running averages in evaluation mode. The runs are float16
runs without a loss scaler: every tensor a float16 run would hold is checked against float16's
range, and a value past it becomes inf, as it would there (float16's rounding is left out: it
does not change a symptom). The loss is the stable log-softmax cross-entropy (autocast runs it
in float32). Shapes: B rows, D0 inputs, D stream width, H hidden units, C classes.
"""
from __future__ import annotations

import numpy as np

FP16_MAX = 65504.0
BN_EPS = 1e-5
BN_MOMENTUM = 0.1
# The ufuncs' own reductions, called directly: ``t.max()`` and ``t.mean(axis=0)`` reach the same
# ``reduce`` through a Python wrapper each time, and a grading's runs make about 400,000 such
# calls on arrays of a few hundred entries, where the wrapper costs as much as the work. The
# results are the same bits (``mean`` is ``add.reduce`` divided by the count).
_max, _min, _sum = np.maximum.reduce, np.minimum.reduce, np.add.reduce


def mean0(t):
    """``t.mean(axis=0)``, bit for bit."""
    return _sum(t, 0) / t.shape[0]


_SURELY_IN_RANGE = FP16_MAX * FP16_MAX * (1 - 1e-6)
"""A sum of squares at most this has no entry past float16's range: the margin is far above the
relative error of a float64 sum of at most a few thousand non-negative terms (about 1e-12)."""


def fp16(t):
    """``t`` with every entry past float16's range turned into inf (NaN stays NaN)."""
    # The common case in one BLAS pass: almost every tensor of a run is far inside the range, and
    # ``vdot`` costs a third of the two reductions. NaN, inf and anything near the edge fail the
    # test and take the exact way below, so the result is the same bits either way.
    if np.vdot(t, t) <= _SURELY_IN_RANGE:
        return t
    hi, lo = _max(t, None), _min(t, None)
    if not (hi <= FP16_MAX and lo >= -FP16_MAX):  # NaN too: its max is NaN, which hid an overflow
        t = np.where(np.abs(t) > FP16_MAX, np.sign(t) * np.inf, t)
    return t


def bn_forward(z, stats, train):
    """(normalised z, the backward's cache, the running statistics after this call)."""
    if train:
        mean = mean0(z)
        centred = z - mean
        var = mean0(centred * centred)  # ``** 2`` is numpy's square: the same bits
        stats = (mean, var) if stats is None else ((1 - BN_MOMENTUM) * stats[0] + BN_MOMENTUM * mean,
                                                   (1 - BN_MOMENTUM) * stats[1] + BN_MOMENTUM * var)
    else:
        mean, var = stats
        centred = z - mean
    rstd = 1.0 / np.sqrt(var + BN_EPS)
    zn = centred * rstd
    return zn, (zn, rstd, train), stats


def bn_backward(dzn, cache):
    xhat, rstd, train = cache
    if not train:
        return dzn * rstd
    return rstd * (dzn - mean0(dzn) - xhat * mean0(dzn * xhat))


class Net:
    """``blocks``: a list of [W1 (D, H), W2 (H, D), gain (a float)]."""

    def __init__(self, W_in, blocks, W_out, bn: bool):
        self.W_in, self.blocks, self.W_out, self.bn = W_in, blocks, W_out, bn
        self.stats: dict = {}

    def weights(self) -> list:
        """Every weight matrix, in the order of a trace's grad_norms columns."""
        return [self.W_in] + [w for block in self.blocks for w in block[:2]] + [self.W_out]

    def set_weights(self, weights) -> None:
        self.W_in, self.W_out = weights[0], weights[-1]
        for i, block in enumerate(self.blocks):
            block[0], block[1] = weights[1 + 2 * i], weights[2 + 2 * i]

    def forward(self, x, train=True):
        """(logits, the backward's cache)."""
        caches = []
        h = fp16(x @ self.W_in)                              # B, D
        for i, (W1, W2, gain) in enumerate(self.blocks):
            z = fp16(h @ W1)                                 # B, H
            bn = None
            if self.bn:
                z, bn, self.stats[i] = bn_forward(z, self.stats.get(i), train)
            a = np.maximum(z, 0.0)
            f = fp16(a @ W2)                                 # B, D
            caches.append((h, z, a, f, bn))
            h = h + gain * f
        hn, head = h, None
        if self.bn:
            hn, head, self.stats["head"] = bn_forward(h, self.stats.get("head"), train)
        return fp16(hn @ self.W_out), (x, caches, hn, head)  # B, C

    def backward(self, dlogits, cache):
        """(every weight's gradient in ``weights()`` order, every block's gain gradient)."""
        x, caches, hn, head = cache
        dW_out = fp16(hn.T @ dlogits)
        dh = fp16(dlogits @ self.W_out.T)
        if head is not None:
            dh = bn_backward(dh, head)
        per_block, dgains = [], []
        for (W1, W2, gain), (h_in, z, a, f, bn) in zip(reversed(self.blocks), reversed(caches)):
            dgains.append(float(_sum(dh * f, None)))
            df = gain * dh
            dW2 = fp16(a.T @ df)
            dz = fp16(df @ W2.T) * (z > 0)
            if bn is not None:
                dz = bn_backward(dz, bn)
            per_block.append((fp16(h_in.T @ dz), dW2))
            dh = dh + fp16(dz @ W1.T)
        grads = [fp16(x.T @ dh)] + [g for pair in reversed(per_block) for g in pair] + [dW_out]
        return grads, dgains[::-1]


class Momentum:
    """SGD with momentum 0.9 over a network's weights and its blocks' gains, held in one flat
    buffer whose views the network's weights become: a step is a few numpy calls instead of four
    per parameter, element by element the arithmetic of ``v = 0.9 * v + g; p = p - lr * v`` (the
    same bits). Made anew, its velocity zero, when the network grows (new parameters)."""

    def __init__(self, net: Net, lr: float):
        weights = net.weights()
        self.net, self.lr, self.count = net, lr, len(weights)
        gains = np.array([b[2] for b in net.blocks], dtype=np.float64)
        self.params = np.concatenate([w.ravel() for w in weights] + [gains])
        self.velocity = np.zeros_like(self.params)
        views, at = [], 0
        for w in weights:
            views.append(self.params[at:at + w.size].reshape(w.shape))
            at += w.size
        self.gains_at = at
        net.set_weights(views)

    def step(self, step: list) -> None:
        """Take one step along ``step``: every weight's gradient in ``Net.weights()`` order, then
        every block's gain gradient (floats)."""
        flat = np.concatenate([g.ravel() for g in step[:self.count]] +
                              [np.array(step[self.count:], dtype=np.float64)])
        velocity = self.velocity
        velocity *= 0.9
        velocity += flat
        self.params -= self.lr * velocity
        for block, gain in zip(self.net.blocks, self.params[self.gains_at:].tolist()):
            block[2] = gain


def cross_entropy(logits, y):
    """(the mean loss, dlogits (B, C), log-probabilities, one-hot targets)."""
    shifted = logits - _max(logits, 1, keepdims=True)
    logp = shifted - np.log(_sum(np.exp(shifted), 1, keepdims=True))
    rows = np.arange(len(y))
    onehot = np.zeros_like(logp)
    onehot[rows, y] = 1.0
    return -float(_sum(logp[rows, y], None) / len(y)), (np.exp(logp) - onehot) / len(y), logp, onehot
