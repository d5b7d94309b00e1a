# question: straight_through
# expect: full
# Vectorised numpy: np.round (half to even), np.clip, and a mask on the unrounded x / scale.
import numpy as np


def fake_quant_forward(x, scale, qmin, qmax):
    return scale * np.clip(np.round(x / scale), qmin, qmax)


def fake_quant_backward(dout, x, scale, qmin, qmax):
    u = x / scale
    return np.where((u >= qmin) & (u <= qmax), dout, 0.0)
