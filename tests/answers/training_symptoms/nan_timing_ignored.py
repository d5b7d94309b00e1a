# Trap nan-timing-ignored: every NaN is read as a NaN at the start, whenever it first appears,
# so a run that broke after hundreds of healthy steps is blamed on its init.
def diagnose(trace):
    if np.isfinite(trace["loss"][0]) and trace["loss"][0] > 3 * np.log(trace["num_classes"]):
        return "init-scale"
    loss, val, norms = trace["loss"], trace["val_loss"], trace["grad_norms"]
    if not np.isfinite(loss).all():
        if np.isnan(loss[0]) and np.isfinite(norms[:10]).all() and norms[0].max() < 100:
            return "log-zero"
        return "init-scale"
    for t in np.flatnonzero(np.diff(trace["depth"])) + 1:
        before = loss[max(0, t - 20):t]
        if loss[t] > np.median(before) + max(0.5, 4 * np.std(before)):
            return "block-not-identity"
    if np.mean(np.diff(loss[:100]) > 0) < 0.2:
        return "repeated-batch"
    if val[-1] > val[0] or val[-1] > 2 * np.mean(loss[-15:]):
        return "bn-train-mode"
    return "healthy"
