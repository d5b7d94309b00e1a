# question: training_symptoms
# expect: full
# A right answer that measures each symptom once, then walks a table of (symptom, cause) rules
# in order; the gated block vectorised with einsum.
import numpy as np


def _symptoms(trace):
    loss, val, norms = trace["loss"], trace["val_loss"], trace["grad_norms"]
    bad = np.flatnonzero(~np.isfinite(loss))
    first = int(bad[0]) if bad.size else None
    grown = np.flatnonzero(np.diff(trace["depth"])) + 1
    jumps = []
    for t in grown:
        before = loss[max(0, t - 15):t]
        jumps.append((loss[t] - np.mean(before)) / (np.std(before) + 1e-12))
    finite = loss[np.isfinite(loss)]
    return {
        "starts_high": bool(np.isfinite(loss[0])) and loss[0] > 4 * np.log(trace["num_classes"]),
        "nan_early": first is not None and first < 30,
        "nan_late": first is not None and first >= 30,
        "loss_nan_grads_fine": first == 0 and bool(np.all(np.isfinite(norms[:5]))) and norms[0].max() < 30,
        "jump": bool(jumps) and first is None and max(jumps) > 4.0,
        "too_smooth": first is None and np.mean(np.diff(finite[:100]) > 0) < 0.25,
        "val_stuck": first is None and np.min(val[-5:]) >= 0.9 * val[0],
    }


RULES = [("starts_high", "init-scale"), ("nan_late", "fp16-overflow"), ("loss_nan_grads_fine", "log-zero"), ("nan_early", "init-scale"),
         ("jump", "block-not-identity"), ("too_smooth", "repeated-batch"), ("val_stuck", "bn-train-mode")]


def diagnose(trace):
    found = _symptoms(trace)
    return next((cause for symptom, cause in RULES if found[symptom]), "healthy")


def gated_block_forward(h, W1, W2, gain):
    return h + np.einsum("d,nd->nd", gain, np.einsum("nh,hd->nd", np.clip(h @ W1, 0, None), W2))


def gated_block_backward(dout, h, W1, W2, gain):
    z = np.einsum("nd,dh->nh", h, W1)
    a = np.clip(z, 0, None)
    g = np.einsum("nd,d->nd", dout, gain)
    dz = np.einsum("nd,hd->nh", g, W2) * (z > 0)
    return (dout + np.einsum("nh,dh->nd", dz, W1), np.einsum("nd,nh->dh", h, dz), np.einsum("nh,nd->hd", a, g),
            np.einsum("nd,nd->d", dout, np.einsum("nh,hd->nd", a, W2)))
