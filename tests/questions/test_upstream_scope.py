"""A downstream function found right given the learner's own upstream one is right on that
check's input, not everywhere: gradient_clinic's diagnose here also names every layer after a
BatchNorm (bn-downstream), which a patient whose BatchNorm is its last layer cannot show. The
feedback said "diagnose needs no change"; it says what it knows, on this input."""
from conftest import graded_in_process

ANSWER = '''
import numpy as np
norm = lambda a: float(np.sqrt(np.sum(a * a)))

def update_ratios(params_before, params_after, grads):
    g = np.array([norm(x) for x in grads])
    u = np.array([norm(a - b) for a, b in zip(params_after, params_before)])
    w = np.array([norm(b) for b in params_before])
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(u == 0, 0.0, np.where(w == 0, np.inf, g / w))   # the gradient's norm, not the update's
    return g, u, r

def dead_relu_fraction(pre_acts):
    return np.array([(z.max(axis=0) <= 0).mean() for z in pre_acts])

def relative_error(analytic, numeric):
    d = max(np.linalg.norm(analytic), np.linalg.norm(numeric))
    return 0.0 if d == 0 else float(np.linalg.norm(analytic - numeric) / d)

def diagnose(s):
    faults = []
    for i in range(len(s["grads"])):
        g, n = s["grads"][i], s["numeric_grads"][i]
        if not g.any() and n.any():
            faults.append(["detached", i])
        elif relative_error(g, n) > 1e-4:
            faults.append(["stale-activation", i])
        elif g.any() and np.array_equal(s["params_after"][i], s["params_before"][i]):
            faults.append(["frozen", i])
        gain = np.sqrt(np.mean(s["pre_acts"][i] ** 2) / np.mean(s["inputs"][i] ** 2))
        if gain > 8: faults.append(["exploding-init", i])
        if gain < 1 / 8: faults.append(["vanishing-init", i])
        if relative_error(s["eval_batch"][i], s["eval_split"][i]) > 1e-6:
            faults.append(["bn-train-at-eval", i])                      # every layer after it too
    _, u, r = update_ratios(s["params_before"], s["params_after"], s["grads"])
    if (u > 0).any() and np.median(r[u > 0]) > 1 / 32:
        faults.append(["lr-too-large", None])
    return faults
'''


def test_right_given_the_upstream_is_said_of_this_input_only():
    result = graded_in_process("gradient_clinic", ANSWER, base=False)
    told = [t.feedback for t in result.tests if not t.passed and "is right as it is" in t.feedback]
    assert told
    for text in told:
        assert "diagnose is right as it is on this input" in text and "needs no change" not in text, text
