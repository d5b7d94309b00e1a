# Trap bias-not-summed: db sums over the batch but keeps one value per output position.
_backward = conv1d_backward


def conv1d_backward(dout, x, w, stride, padding):
    dx, dw, _ = _backward(dout, x, w, stride, padding)
    return dx, dw, dout.sum(axis=0)
