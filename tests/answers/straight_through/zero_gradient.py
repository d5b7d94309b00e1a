# Trap zero-gradient: the true derivative of round, 0 on every flat step of the staircase.
def fake_quant_backward(dout, x, scale, qmin, qmax):
    return np.zeros_like(dout)
