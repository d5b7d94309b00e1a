# Trap round-half-up, C's round(): ties go away from zero (-2.5 -> -3, 2.5 -> 3).
def fake_quant_forward(x, scale, qmin, qmax):
    u = x / scale
    return np.clip(np.sign(u) * np.floor(np.abs(u) + 0.5), qmin, qmax) * scale
