# The overflow test done on the float64 product (scale * g > 65504) instead of on the float16
# result: a product of 65510 rounds to 65504 in float16, finite, but is called an overflow.
# Found only at float16's edge (issue 24, class 2). Not a named trap.
# expect: wrong
# not named: step-on-inf nan-not-checked clip-the-loss clip-before-unscale
_right_amp_step = amp_step


def amp_step(params, grads, loss, state, hparams):
    scale, tracker = state
    if any(np.any(~np.isfinite(g) | (np.abs(g * scale) > 65504.0)) for g in grads):
        new_scale, new_tracker = update_scale(scale, tracker, True, hparams["growth_factor"],
                                              hparams["backoff_factor"], hparams["growth_interval"])
        return [p.copy() for p in params], (new_scale, new_tracker), None, True
    return _right_amp_step(params, grads, loss, state, hparams)
