# question: per_step_update_trap
# expect: full
# A one-hot selection tensor S[l, k, j] = 1 when output l's tap k reads padded input j.
import numpy as np

def _select(L, K, stride, padding):
    L_out = (L + 2 * padding - K) // stride + 1
    S = np.zeros((L_out, K, L))
    for l in range(L_out):
        for k in range(K):
            j = l * stride + k - padding
            if 0 <= j < L:
                S[l, k, j] = 1.0
    return S

def conv1d_forward(x, w, b, stride, padding):
    S = _select(x.shape[2], w.shape[2], stride, padding)
    return np.einsum("lkj,nij,oik->nol", S, x, w, optimize=True) + b[:, None]

def conv1d_backward(dout, x, w, stride, padding):
    S = _select(x.shape[2], w.shape[2], stride, padding)
    dx = np.einsum("lkj,nol,oik->nij", S, dout, w, optimize=True)
    dw = np.einsum("lkj,nol,nij->oik", S, dout, x, optimize=True)
    db = np.einsum("nol->o", dout)
    return dx, dw, db
