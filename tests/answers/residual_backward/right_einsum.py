# question: residual_backward
# expect: full
# A right answer that keeps each block's mask from a cache it builds itself, and writes every
# product with einsum; the identity's share is added by the caller of a block's backward.
import numpy as np


def residual_forward(x, weights, skip):
    out = [x]
    for W1, W2 in weights:
        branch = np.einsum("nh,hd->nd", np.clip(np.einsum("nd,dh->nh", out[-1], W1), 0, None), W2)
        out.append(out[-1] + branch if skip else branch)
    return np.array(out)


def _block_vjp(g, h, W1, W2):
    """What block F sends back to h, and its weights' gradients (no identity)."""
    z = np.einsum("nd,dh->nh", h, W1)
    dz = np.einsum("nd,hd->nh", g, W2) * (z > 0)
    return np.einsum("nh,dh->nd", dz, W1), np.einsum("nd,nh->dh", h, dz), np.einsum("nh,nd->hd", np.maximum(z, 0), g)


def residual_backward(dout, hs, weights, skip):
    g = dout
    dhs, grads = [g], []
    for h, (W1, W2) in zip(hs[-2::-1], weights[::-1]):
        back, dW1, dW2 = _block_vjp(g, h, W1, W2)
        g = g + back if skip else back
        dhs.append(g)
        grads.append((dW1, dW2))
    return np.array(dhs[::-1]), grads[::-1]


def gradient_norms(dout, x, weights):
    def norms(skip):
        dhs = residual_backward(dout, residual_forward(x, weights, skip), weights, skip)[0]
        return np.linalg.norm(dhs.reshape(len(dhs), -1), axis=1)
    return norms(True), norms(False)


def kaiming_std(shape, mode, negative_slope):
    fan = {"fan_in": shape[0], "fan_out": shape[1]}[mode]
    return float(np.sqrt(2.0 / (1.0 + negative_slope ** 2) / fan))
