# expect: unnamed
# The squared norms (no square root): the layer-by-layer shape is right, the numbers are not.
def gradient_norms(dout, x, weights):
    out = []
    for skip in (True, False):
        dhs, _ = residual_backward(dout, residual_forward(x, weights, skip), weights, skip)
        out.append(np.sum(dhs * dhs, axis=(1, 2)))
    return out[0], out[1]
