# expect: trap=step-on-inf
# unscale_grads tests only the first tensor for inf and NaN: an overflow in any later tensor is
# missed, and the step built on it goes ahead on inf.
_right_unscale = unscale_grads


def unscale_grads(scaled_grads, scale):
    grads, _ = _right_unscale(scaled_grads, scale)
    return grads, not np.isfinite(grads[0]).all()
