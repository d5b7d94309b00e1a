# question: mlp_backprop
# expect: full
# einsum everywhere, np.heaviside for the mask, ufunc out= on fresh arrays.
import numpy as np


def mse_loss(out, y):
    r = np.subtract(out, y)
    n = r.shape[0]
    return 0.5 * np.einsum("ij,ij->", r, r) / n, np.divide(r, n, out=np.empty_like(r))


def mlp_forward(x, W1, b1, W2, b2):
    z = np.einsum("nd,dh->nh", x, W1) + b1
    h = np.maximum(z, 0, out=np.empty_like(z))
    return np.einsum("nh,ho->no", h, W2) + b2, h, z


def mlp_backward(dout, x, z, h, W1, W2):
    dW2 = np.einsum("nh,no->ho", h, dout)
    db2 = np.einsum("no->o", dout)
    dz = np.einsum("no,ho->nh", dout, W2)
    dz *= np.heaviside(z, 0.0)
    return (np.einsum("nh,dh->nd", dz, W1), np.einsum("nd,nh->dh", x, dz), dz.sum(0), dW2, db2)
