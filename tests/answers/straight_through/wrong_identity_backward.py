# question: straight_through
# expect: trap=no-clip
# Round is treated as the identity, and so is the clip: dout passes everywhere.
import numpy as np


def fake_quant_forward(x, scale, qmin, qmax):
    return scale * np.clip(np.round(x / scale), qmin, qmax)



def fake_quant_backward(dout, x, scale, qmin, qmax):
    return dout.copy()
