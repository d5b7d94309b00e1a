# question: straight_through
# expect: wrong
# Clips x itself to [qmin, qmax] (in the units of x, not of the grid), then rounds to the grid.
import numpy as np



def fake_quant_forward(x, scale, qmin, qmax):
    return scale * np.round(np.clip(x, qmin, qmax) / scale)



def fake_quant_backward(dout, x, scale, qmin, qmax):
    return np.where((x >= qmin) & (x <= qmax), dout, 0.0)
