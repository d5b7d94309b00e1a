# expect: trap=initial-loss-ignored
# An init too large is recognised only when it ends in NaN: the first loss is never compared
# with ln C, so an init-scale run that a clipped loop keeps finite reads as healthy.
def diagnose(trace):
    loss, val, norms = trace["loss"], trace["val_loss"], trace["grad_norms"]
    broken = ~np.isfinite(loss)
    if broken.any():
        first = int(np.argmax(broken))
        if first >= 50:
            return "fp16-overflow"
        if first == 0 and np.isfinite(norms[:10]).all() and norms[0].max() < 100:
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
