# question: straight_through
# expect: wrong
# The mask compares the forward's output with the ends, strictly: an input exactly at an end
# and one far beyond it look the same after clipping.
import numpy as np


def fake_quant_forward(x, scale, qmin, qmax):
    return scale * np.clip(np.round(x / scale), qmin, qmax)



def fake_quant_backward(dout, x, scale, qmin, qmax):
    out = fake_quant_forward(x, scale, qmin, qmax)
    return dout * ((out > qmin * scale) & (out < qmax * scale))
