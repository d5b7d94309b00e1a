# Trap mean-over-steps: the filter gradient is averaged over output positions, not summed.
_backward = conv1d_backward


def conv1d_backward(dout, x, w, stride, padding):
    dx, dw, db = _backward(dout, x, w, stride, padding)
    return dx, dw / dout.shape[2], db
