# question: straight_through
# expect: trap=zero-gradient
# The exact derivative of the staircase: 0 almost everywhere.
import numpy as np


def fake_quant_forward(x, scale, qmin, qmax):
    return scale * np.clip(np.round(x / scale), qmin, qmax)



def fake_quant_backward(dout, x, scale, qmin, qmax):
    return np.zeros_like(dout)
