# expect: wrong
# says: idx
# The right experts and gates, listed by expert index (as np.argpartition then np.sort would
# give them) instead of largest logit first.
_right_forward = router_forward


def router_forward(x, Wr, k, aux_coef):
    gates, idx, aux = _right_forward(x, Wr, k, aux_coef)
    order = np.argsort(idx, axis=1)
    return np.take_along_axis(gates, order, axis=1), np.take_along_axis(idx, order, axis=1), aux
