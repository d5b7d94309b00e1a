# question: straight_through
# expect: wrong
# The chain rule through x / scale and back through * scale, applied as if they did not cancel.
import numpy as np


def fake_quant_forward(x, scale, qmin, qmax):
    return scale * np.clip(np.round(x / scale), qmin, qmax)



def fake_quant_backward(dout, x, scale, qmin, qmax):
    u = x / scale
    return np.where((u >= qmin) & (u <= qmax), dout * scale, 0.0)
