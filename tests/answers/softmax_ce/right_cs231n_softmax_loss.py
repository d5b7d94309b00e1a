# question: softmax_ce
# expect: full
# Ported from CS231n's layers.softmax_loss(x, y) -> (loss, dx); the Jacobian from its
# definition, d p_i / d z_j = p_i (delta_ij - p_j), built with broadcasting.
import numpy as np


def softmax_loss(x, y):
    shifted_logits = x - np.max(x, axis=1, keepdims=True)
    Z = np.sum(np.exp(shifted_logits), axis=1, keepdims=True)
    log_probs = shifted_logits - np.log(Z)
    probs = np.exp(log_probs)
    N = x.shape[0]
    loss = -np.sum(log_probs[np.arange(N), y]) / N
    dx = probs.copy()
    dx[np.arange(N), y] -= 1
    dx /= N
    return loss, dx


def softmax_cross_entropy(logits, labels):
    loss, dx = softmax_loss(logits, labels)
    return float(loss), dx


def softmax_jacobian(z):
    p = np.exp(z - np.max(z))
    p /= p.sum()
    return p[:, None] * (np.eye(len(p)) - p[None, :])
