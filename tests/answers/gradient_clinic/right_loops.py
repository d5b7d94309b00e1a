# question: gradient_clinic
# expect: full
# A right answer in plain Python loops over the entries (math.sqrt, no numpy reductions).
import math
import statistics

import numpy as np


def _norm(a):
    return math.sqrt(sum(float(v) * float(v) for v in np.asarray(a).ravel()))


def update_ratios(params_before, params_after, grads):
    grad_norms, update_norms, ratios = [], [], []
    for before, after, g in zip(params_before, params_after, grads):
        grad_norms.append(_norm(g))
        step = _norm(np.asarray(after) - np.asarray(before))
        update_norms.append(step)
        weight = _norm(before)
        ratios.append(0.0 if step == 0 else (math.inf if weight == 0 else step / weight))
    return np.array(grad_norms), np.array(update_norms), np.array(ratios)


def dead_relu_fraction(pre_acts):
    fractions = []
    for z in pre_acts:
        n, d = z.shape
        dead = sum(1 for j in range(d) if all(z[i, j] <= 0 for i in range(n)))
        fractions.append(dead / d)
    return np.array(fractions)


def relative_error(analytic, numeric):
    scale = max(_norm(analytic), _norm(numeric))
    if scale == 0:
        return 0.0
    return _norm(np.asarray(analytic) - np.asarray(numeric)) / scale


def _rms(a):
    values = np.asarray(a).ravel()
    return math.sqrt(sum(float(v) ** 2 for v in values) / len(values))


def diagnose(snapshot):
    faults = []
    _, update_norms, ratios = update_ratios(snapshot["params_before"], snapshot["params_after"], snapshot["grads"])
    for i in range(len(snapshot["grads"])):
        g, n = snapshot["grads"][i], snapshot["numeric_grads"][i]
        if _norm(g) == 0 and _norm(n) > 0:
            faults.append(["detached", i])
        elif relative_error(g, n) > 1e-4:
            faults.append(["stale-activation", i])
        elif _norm(g) > 0 and update_norms[i] == 0:
            faults.append(["frozen", i])
        gain = _rms(snapshot["pre_acts"][i]) / _rms(snapshot["inputs"][i])
        if gain > 8:
            faults.append(["exploding-init", i])
        elif gain < 1 / 8:
            faults.append(["vanishing-init", i])
    for i in range(len(snapshot["eval_batch"])):
        if relative_error(snapshot["eval_batch"][i], snapshot["eval_split"][i]) > 1e-6:
            faults.append(["bn-train-at-eval", i])
            break
    moved = [r for r, u in zip(ratios, update_norms) if u > 0]
    if moved and statistics.median(moved) > 1 / 32:
        faults.append(["lr-too-large", None])
    return faults
