# expect: wrong
# says: the dtype is part of the answer
# The right states' gradients, returned in float32: within a 1e-6 tolerance of the float64
# values, but the contract's dhs is float64, and the dtype is part of the answer.
_right_backward = residual_backward


def residual_backward(dout, hs, weights, skip):
    dhs, grads = _right_backward(dout, hs, weights, skip)
    return dhs.astype(np.float32), grads
