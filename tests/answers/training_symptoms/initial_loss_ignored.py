# Trap initial-loss-ignored: a run that breaks at the start is always blamed on the loss's log
# of 0, without reading the first loss against ln C or the gradients at step 0.
def diagnose(trace):
    loss, val = trace["loss"], trace["val_loss"]
    broken = ~np.isfinite(loss)
    if broken.any():
        return "fp16-overflow" if int(np.argmax(broken)) >= 50 else "log-zero"
    for t in np.flatnonzero(np.diff(trace["depth"])) + 1:
        before = loss[max(0, t - 20):t]
        if loss[t] > np.median(before) + max(0.5, 4 * np.std(before)):
            return "block-not-identity"
    if np.mean(np.diff(loss[:100]) > 0) < 0.2:
        return "repeated-batch"
    if val[-1] > val[0] or val[-1] > 2 * np.mean(loss[-15:]):
        return "bn-train-mode"
    return "healthy"
