# The gradients divided by the scale twice (unscaled, then unscaled again before clipping):
# issue 24, class 4 saw it named clip-the-loss. No trap's formula explains it: no name.
# expect: wrong
# not named: clip-the-loss clip-before-unscale unscale-in-fp16
_right_unscale = unscale_grads


def unscale_grads(scaled, scale):
    grads, found_inf = _right_unscale(scaled, scale)
    return [g / scale for g in grads], found_inf
