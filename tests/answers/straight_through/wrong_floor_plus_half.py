# question: straight_through
# expect: trap=round-half-up
# Rounds with floor(u + 0.5): every tie goes up.
import numpy as np



def fake_quant_forward(x, scale, qmin, qmax):
    return scale * np.clip(np.floor(x / scale + 0.5), qmin, qmax)


def fake_quant_backward(dout, x, scale, qmin, qmax):
    u = x / scale
    return np.where((u >= qmin) & (u <= qmax), dout, 0.0)
