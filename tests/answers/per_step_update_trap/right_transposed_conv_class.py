# question: per_step_update_trap
# expect: full
# Backward as convolutions: dw = correlate(x, dilated dout), dx = full conv of dilated dout with w.
import numpy as np


class Conv1d:
    def __init__(self, stride, padding):
        self.s, self.p = stride, padding

    def forward(self, x, w, b):
        N, C, L = x.shape
        O, _, K = w.shape
        xp = np.pad(x, ((0, 0), (0, 0), (self.p, self.p)))
        L_out = (L + 2 * self.p - K) // self.s + 1
        out = np.tile(b.reshape(1, O, 1), (N, 1, L_out)).astype(np.float64)
        for l in range(L_out):
            out[:, :, l] += np.tensordot(xp[:, :, l * self.s:l * self.s + K], w, axes=([1, 2], [1, 2]))
        return out

    def dilate(self, dout, K, Lp):
        N, O, L_out = dout.shape
        d = np.zeros((N, O, Lp - K + 1))          # stride-1 output length over the padded input
        d[:, :, ::self.s][:, :, :L_out] = dout
        return d

    def backward(self, dout, x, w):
        N, C, L = x.shape
        O, _, K = w.shape
        xp = np.pad(x, ((0, 0), (0, 0), (self.p, self.p)))
        d = self.dilate(dout, K, xp.shape[2])
        M = d.shape[2]
        dw = np.stack([np.einsum("nom,ncm->oc", d, xp[:, :, k:k + M]) for k in range(K)], axis=2)
        dpad = np.pad(d, ((0, 0), (0, 0), (K - 1, K - 1)))
        wf = w[:, :, ::-1]
        dxp = np.stack([np.einsum("nok,ock->nc", dpad[:, :, t:t + K], wf) for t in range(xp.shape[2])], axis=2)
        return dxp[:, :, self.p:self.p + L], dw, dout.sum(axis=2).sum(axis=0)


def conv1d_forward(x, w, b, stride, padding):
    return Conv1d(stride, padding).forward(x, w, b)


def conv1d_backward(dout, x, w, stride, padding):
    return Conv1d(stride, padding).backward(dout, x, w)
