# question: straight_through
# expect: full
# Element by element with Python's own round(), which already rounds half to even.
import numpy as np


def fake_quant_forward(x, scale, qmin, qmax):
    out = np.empty_like(x)
    flat_x, flat_out = x.reshape(-1), out.reshape(-1)
    for i, v in enumerate(flat_x):
        q = round(float(v) / scale)
        flat_out[i] = scale * min(max(q, qmin), qmax)
    return out


def fake_quant_backward(dout, x, scale, qmin, qmax):
    dx = np.zeros_like(dout)
    flat_dx, flat_dout, flat_x = dx.reshape(-1), dout.reshape(-1), x.reshape(-1)
    for i in range(flat_x.size):
        if qmin <= flat_x[i] / scale <= qmax:
            flat_dx[i] = flat_dout[i]
    return dx
