# Trap smooth-loss-trusted: a training loss that falls steadily, without the noise of
# minibatches, is read as the best of runs.
_right_diagnose = diagnose


def diagnose(trace):
    if np.isfinite(trace["loss"]).all() and np.mean(np.diff(trace["loss"][:100]) > 0) < 0.2:
        return "healthy"  # "it converges beautifully"
    return _right_diagnose(trace)
