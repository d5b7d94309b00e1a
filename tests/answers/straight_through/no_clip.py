# Trap no-clip: round treated as the identity, but the clip forgotten: dout passes everywhere.
def fake_quant_backward(dout, x, scale, qmin, qmax):
    return dout.copy()
