"""gradient_clinic's patients: small networks the learner never sees, with faults planted.

A patient is an MLP of L layers, ``z_i = a_i @ W_i`` (then BatchNorm where the network has
one), ``a_{i+1} = relu(z_i)``, the last layer linear, loss ``0.5 * sum((out - y)^2) / N``. The
grader trains it for one SGD step with its own honest forward and backward (checked against
central differences for every healthy patient, see tests/questions/test_gradient_clinic.py), plants one
fault where the story says it happens, and hands the learner's ``diagnose`` what a training
loop would have logged: the snapshot (docs/questions/gradient_clinic.md). The learning rate
is set so that the median update-to-weight ratio is 5e-4, a healthy step.
"""
from __future__ import annotations

import numpy as np

N, N_EVAL, BN_EPS, FD_EPS = 16, 12, 1e-5, 1e-6
HEALTHY_RATIO = 5e-4
FAULTS = ("detached", "frozen", "stale-activation", "bn-train-at-eval", "exploding-init",
          "vanishing-init", "lr-too-large")


class Net:
    """Weights, the layers with BatchNorm (with running statistics), and the forward."""

    def __init__(self, weights, bn_layers=(), running=None):
        self.weights, self.bn_layers = weights, set(bn_layers)
        self.running = running or {}  # layer -> (mean, var), the running statistics

    def forward(self, x, weights=None, train=True, batch_stats_at_eval=()):
        """(output, inputs a_i, pre-activations z_i, BatchNorm caches). A weight may carry a
        leading axis of P variants (finite differences): every later array then has it too."""
        weights = self.weights if weights is None else weights
        a, inputs, pre_acts, caches = x, [], [], {}
        for i, W in enumerate(weights):
            inputs.append(a)
            z = a @ W  # (P,) N, D_{i+1}
            if i in self.bn_layers:
                if train or i in batch_stats_at_eval:  # the batch's own statistics
                    mean, var = z.mean(axis=-2, keepdims=True), z.var(axis=-2, keepdims=True)
                else:
                    mean, var = self.running[i]
                rstd = 1.0 / np.sqrt(var + BN_EPS)
                z = (z - mean) * rstd
                caches[i] = (z, rstd)
            pre_acts.append(z)
            a = np.maximum(z, 0.0) if i < len(weights) - 1 else z
        return a, inputs, pre_acts, caches

    def losses(self, x, y, weights=None):
        """The loss, one per variant when a weight carries a leading axis."""
        out = self.forward(x, weights)[0]
        return 0.5 * np.sum((out - y) ** 2, axis=(-2, -1)) / len(x)

    def backward(self, x, y, stale_layer=None):
        """Every dW_i; with ``stale_layer`` k, dW_k reads an input changed in place after the
        forward saved it (an in-place ``h *= 1.5`` on the saved tensor)."""
        out, inputs, pre_acts, caches = self.forward(x)
        dz = (out - y) / len(x)  # N, D_L
        grads = [None] * len(self.weights)
        for i in reversed(range(len(self.weights))):
            if i < len(self.weights) - 1:
                dz = dz * (pre_acts[i] > 0)  # through the ReLU
            if i in caches:  # BatchNorm in training mode (no affine)
                xhat, rstd = caches[i]
                dz = rstd * (dz - dz.mean(axis=0, keepdims=True) - xhat * (dz * xhat).mean(axis=0, keepdims=True))
            saved = inputs[i] * 1.5 if i == stale_layer else inputs[i]
            grads[i] = saved.T @ dz
            dz = dz @ self.weights[i].T
        return grads

    def numeric_grads(self, x, y):
        """Central differences of the loss for every entry of every weight, each layer's
        entries moved all at once as P variants of its weight (two batched forwards)."""
        result = []
        for i, W in enumerate(self.weights):
            steps = np.eye(W.size).reshape(W.size, *W.shape) * FD_EPS  # P, D_i, D_{i+1}
            plus, minus = ([*self.weights[:i], W + sign * steps, *self.weights[i + 1:]] for sign in (1, -1))
            result.append(((self.losses(x, y, plus) - self.losses(x, y, minus)) / (2 * FD_EPS)).reshape(W.shape))
        return result


def he_weights(rng, widths):
    return [rng.normal(size=(widths[i], widths[i + 1])) * np.sqrt(2.0 / widths[i])
            for i in range(len(widths) - 1)]


def patient(rng, fault=None, layer=None, layers=None, second=None):
    """(snapshot, the faults planted as {(fault, layer)}). ``second`` plants another
    (fault, layer) as well, or several: a list of them (two frozen layers, say)."""
    planted = {(fault, layer)} if fault else set()
    planted |= {second} if isinstance(second, tuple) else set(second or ())
    faults = {f: i for f, i in planted if f != "frozen"}  # fault -> layer
    if any(f == "frozen" for f, _ in planted):
        faults["frozen"] = {i for f, i in planted if f == "frozen"}  # the one fault a patient may have twice
    L = layers or int(rng.integers(3, 6))
    init_layers = {faults.get("exploding-init"), faults.get("vanishing-init")} - {None}
    # BatchNorm rescales whatever reaches it: after a badly scaled layer its own gain would
    # look like the opposite fault, so a patient with an init fault has BatchNorm only before it
    bn_choices = list(range(min(init_layers | {2, L - 1})))
    bn_layer = faults.get("bn-train-at-eval", int(rng.choice(bn_choices)) if bn_choices else None)
    for _ in range(50):  # healthy layers well inside the gain thresholds, inputs away from kinks
        widths = [int(w) for w in rng.integers(5, 9, size=L + 1)]
        weights = he_weights(rng, widths)
        if "exploding-init" in faults:
            weights[faults["exploding-init"]] *= 20.0
        if "vanishing-init" in faults:
            weights[faults["vanishing-init"]] /= 30.0
        net = Net(weights, [] if bn_layer is None else [bn_layer])
        x, y = away_from_kinks(rng, net, widths)
        _, inputs, pre_acts, _ = net.forward(x)
        gains = [(rms(z), rms(a)) for i, (a, z) in enumerate(zip(inputs, pre_acts)) if i not in init_layers]
        if all(0.25 * a < z < 4 * a for z, a in gains):  # an input of all zeros fails too
            break
    return snapshot(rng, net, x, y, faults), planted


def rms(a) -> float:
    return float(np.sqrt(np.mean(a * a)))


def away_from_kinks(rng, net, widths, margin=1e-4):
    """(x, y) with no ReLU input within ``margin`` of 0: finite differences (step 1e-6) that
    straddle a kink are wrong by half a slope, and a healthy layer would fail its check."""
    for _ in range(50):
        x, y = rng.normal(size=(N, widths[0])), rng.normal(size=(N, widths[-1]))
        if all(np.min(np.abs(z)) > margin for z in net.forward(x)[2][:-1]):
            break
    return x, y


def snapshot(rng, net, x, y, faults, update=None):
    """What the training loop logged for one step of ``net`` with ``faults`` planted.
    ``update(W) -> step`` replaces SGD's step when given (the threshold probes)."""
    _, inputs, pre_acts, _ = net.forward(x)
    for i in net.bn_layers:  # running statistics: those of the training batch
        z = inputs[i] @ net.weights[i]
        net.running[i] = (z.mean(axis=0, keepdims=True), z.var(axis=0, keepdims=True))
    grads = net.backward(x, y, stale_layer=faults.get("stale-activation"))
    if "detached" in faults:
        grads[faults["detached"]] = np.zeros_like(grads[faults["detached"]])
    frozen = faults.get("frozen", set())
    still = set(frozen) | {faults.get("detached")}
    ratios = [np.linalg.norm(g) / np.linalg.norm(W) for i, (g, W) in enumerate(zip(grads, net.weights))
              if i not in still]  # the layers that will move: their median ratio is exactly the target
    lr = HEALTHY_RATIO / float(np.median(ratios)) * (100.0 if "lr-too-large" in faults else 1.0)
    after = [W - (lr * g if update is None else update(W)) for W, g in zip(net.weights, grads)]
    for i in frozen:
        after[i] = net.weights[i].copy()
    x_eval = rng.normal(size=(N_EVAL, x.shape[1]))
    late = {faults["bn-train-at-eval"]} if "bn-train-at-eval" in faults else set()

    def outputs(xs):  # each layer's output, in evaluation mode
        out, ins, _, _ = net.forward(xs, train=False, batch_stats_at_eval=late)
        return ins[1:] + [out]
    whole = outputs(x_eval)
    halves = [np.concatenate(pair) for pair in zip(outputs(x_eval[:N_EVAL // 2]), outputs(x_eval[N_EVAL // 2:]))]
    return {"params_before": [W.copy() for W in net.weights], "params_after": after, "grads": grads,
            "numeric_grads": net.numeric_grads(x, y), "inputs": inputs, "pre_acts": pre_acts,
            "eval_batch": whole, "eval_split": halves}


def boundary_patient(rng, kind: str, over: bool):
    """A healthy patient exactly at a threshold (``over=False``: no fault) or past it.
    "gain-up", "gain-down": the last layer is W = 8 I (or I / 8): its output is exactly 8 (1/8)
    times its input, 16 (1/16) past it. "ratio": weights on a grid of 2^-10, every step exactly
    W / 32 (W / 16). Near the two tolerances (float relative errors cannot sit exactly on them):
    "check": one layer's gradient off by a relative 5e-5 (2e-4 past 1e-4); "batch": from one
    layer on, the halves' outputs off by a relative 5e-7 (2e-6 past 1e-6)."""
    L = 4
    widths = [int(w) for w in rng.integers(5, 9, size=L + 1)]
    update, planted = None, set()
    if kind in ("gain-up", "gain-down"):
        k = L - 1  # the linear last layer: its input has exact zeros, but no ReLU follows it
        widths[k + 1] = widths[k]
        weights = he_weights(rng, widths)
        factor = 16.0 if over else 8.0
        weights[k] = np.eye(widths[k]) * (factor if kind == "gain-up" else 1.0 / factor)
        planted = {("exploding-init" if kind == "gain-up" else "vanishing-init", k)} if over else set()
    elif kind == "ratio":
        weights = [np.round(W * 1024) / 1024 for W in he_weights(rng, widths)]
        update = (lambda W: W / 16) if over else (lambda W: W / 32)
        planted = {("lr-too-large", None)} if over else set()
    else:
        weights = he_weights(rng, widths)
    net = Net(weights)
    x, y = away_from_kinks(rng, net, widths)
    logged = snapshot(rng, net, x, y, {}, update=update)
    k = int(rng.integers(1, L))
    if kind == "check":
        off = 2e-4 if over else 5e-5
        logged["grads"][k] = logged["numeric_grads"][k] * (1 + off)  # relative error off / (1 + off)
        planted = {("stale-activation", k)} if over else set()
    elif kind == "batch":
        off = 2e-6 if over else 5e-7
        logged["eval_split"] = [h * (1 + off) if i >= k else h for i, h in enumerate(logged["eval_split"])]
        planted = {("bn-train-at-eval", k)} if over else set()
    return logged, planted
