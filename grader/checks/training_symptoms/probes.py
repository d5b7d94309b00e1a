"""Inputs for the checks of the gated block, and what a failed diagnosis shows of its run.

Shapes: h, dout (N, D); W1 (D, H); W2 (H, D); gain (D,). A trace as in runs.py.
"""
from __future__ import annotations

import numpy as np

MARGIN = 1e-3  # |z| at least this where finite differences (steps of 1e-6) are taken


def block(rng, N, D, H, gain=None):
    """(h, W1, W2, gain), every pre-activation h @ W1 at least MARGIN from 0; a per-channel gain
    of either sign (LayerScale), unless one is given."""
    for _ in range(50):
        h = rng.standard_normal((N, D))
        W1, W2 = rng.standard_normal((D, H)) * np.sqrt(2.0 / D), rng.standard_normal((H, D)) / np.sqrt(H)
        if np.min(np.abs(h @ W1)) > MARGIN:
            break
    if gain is None:
        gain = rng.choice([-1.0, 1.0], size=D) * rng.uniform(0.2, 1.5, size=D)
    return h, W1, W2, np.asarray(gain, dtype=np.float64)


def on_the_kink(rng, N, D, H):
    """(h, W1, W2, gain) of small integers and halves, in which many pre-activations are exactly
    0 (exact arithmetic); the gain is not 0, so the ReLU's mask decides what passes."""
    h = rng.integers(-2, 3, size=(N, D)).astype(np.float64)
    W1 = rng.integers(-1, 2, size=(D, H)).astype(np.float64)
    W2 = rng.integers(-2, 3, size=(H, D)) * 0.5
    return h, W1, W2, np.full(D, 0.5)


def backward_example(ctx, index, name, gain_kind):
    """A callable giving the smallest block on which the learner's gradient ``index`` is still
    wrong; ``gain_kind``: "zero", "half" (with integer inputs, so pre-activations hit 0) or
    "random"."""
    from backprop_traps.grader.checks.training_symptoms.traps import BWD
    from backprop_traps.grader.engine.gradcheck import upstream

    def build(rng, size):
        N, D, H = size
        if gain_kind == "half":
            h, W1, W2, gain = on_the_kink(rng, N, D, H)
        else:
            h, W1, W2 = (np.round(rng.standard_normal(s), 1) for s in ((N, D), (D, H), (H, D)))
            gain = np.zeros(D) if gain_kind == "zero" else np.round(rng.uniform(-1.5, 1.5, size=D), 1)
        dout = np.round(upstream(rng, (N, D)), 1)
        return {"dout": dout, "h": h, "W1": W1, "W2": W2, "gain": gain}
    return lambda: ctx.smallest_failure(BWD, build, [(1, 1, 1), (1, 2, 2), (2, 2, 3)],
                                        lambda *a: ctx.ref.gated_block_backward(*a)[index],
                                        pick=lambda v: v[index], name=name)


def _fmt(values) -> str:
    return "[" + ", ".join(f"{v:.3g}" for v in values) + "]"


def evidence(trace) -> str:
    """The run as a reader would first look at it: the start, the first non-finite step, the
    step the depth changed, the validation loss's first and last value."""
    loss, val, depth = trace["loss"], trace["val_loss"], trace["depth"]
    lines = [f"  C = {trace['num_classes']} classes (ln C = {np.log(trace['num_classes']):.3g}); "
             f"{len(loss)} steps",
             f"  loss at steps 0-4: {_fmt(loss[:5])}; largest gradient norm at step 0: "
             f"{np.max(trace['grad_norms'][0]):.3g}"]
    broken = ~np.isfinite(loss)
    lines.append(f"  first non-finite loss: step {int(np.argmax(broken))}" if broken.any()
                 else "  every loss is finite")
    for t in np.flatnonzero(np.diff(depth)) + 1:
        lines.append(f"  depth {depth[t - 1]} -> {depth[t]} at step {t}: loss at steps {t - 3}-{t + 2}: "
                     f"{_fmt(loss[t - 3:t + 3])}")
    lines.append(f"  validation loss: {val[0]:.3g} at step {trace['val_steps'][0]}, "
                 f"{val[-1]:.3g} at step {trace['val_steps'][-1]}; training loss over the last 15 "
                 f"steps {np.mean(loss[-15:]):.3g}")
    return "What the run shows:\n" + "\n".join(lines)
