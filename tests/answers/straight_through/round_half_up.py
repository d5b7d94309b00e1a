# Trap round-half-up: floor(u + 0.5) sends every tie up (2.5 -> 3) instead of to the even 2.
def fake_quant_forward(x, scale, qmin, qmax):
    return np.clip(np.floor(x / scale + 0.5), qmin, qmax) * scale
