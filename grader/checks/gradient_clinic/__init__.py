"""Hidden checks for gradient_clinic: the tools for debugging training, graded on patients.

Three measurements (``update_ratios``, ``dead_relu_fraction``, ``relative_error``) are
compared with the reference (``ctx.ref``, the solution notebook) on inputs drawn for each
edge: a layer that did not move, a zero weight that did, a unit at exactly 0, gradients
scaled by 1e-6 and 1e6, entries that are 0 in one gradient and 1e-13 in the other. ``diagnose``
is graded on small networks the learner never sees (``probes.py``): one per planted fault,
healthy ones, two faults at once, and patients exactly at each threshold of the contract
(docs/questions/gradient_clinic.md), with the reference's diagnosis as the expected answer.
A wrong answer is named by equality with a trap's form (``traps.py``) or by its behaviour.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.checks.gradient_clinic import probes
from backprop_traps.grader.checks.gradient_clinic.traps import (TRAPS, absolute_forms, dead_forms, diagnosis_forms,
                                                 update_ratio_forms)
from backprop_traps.grader.engine import feedback
from backprop_traps.grader.engine.question import Fail, Question
from backprop_traps.grader.engine.sameness import unchanged

QUESTION = Question("gradient_clinic", "Gradient clinic: name the fault and its layer",
                    traps=TRAPS, difficulty="medium",
                    kinks={"relu-at-0": "a unit whose pre-activation is exactly 0 (it does not fire)",
                           "thresholds": "a gain of exactly 8 or 1/8, a median ratio of exactly 1/32"})
RATIOS, DEAD, REL, DIAGNOSE = "update_ratios", "dead_relu_fraction", "relative_error", "diagnose"


def same(got, expected) -> bool:
    """Arrays or numbers equal where infinite, close where finite; never NaN."""
    try:
        got = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    expected = np.asarray(expected, dtype=np.float64)
    if got.shape != expected.shape or np.any(np.isnan(got)):
        return False
    finite = np.isfinite(expected)
    return bool(np.array_equal(got[~finite], expected[~finite])
                and np.allclose(got[finite], expected[finite], rtol=1e-9, atol=1e-12))


def matching(got, forms: dict) -> str | None:
    for trap, wrongs in forms.items():
        if any(same(got, w) if not isinstance(w, set) else got == w for w in wrongs):
            return trap
    return None


def shorter(value, limit: int = 200) -> str:
    """A learner's answer as text for the feedback, at most ``limit`` characters."""
    text = np.array2string(value, precision=4, threshold=20) if isinstance(value, np.ndarray) else repr(value)
    return text if len(text) <= limit else text[:limit] + " ..."


def fail(what: str, got, expected, forms: dict | None = None, trap: str | None = None) -> Fail:
    trap = trap or matching(got, forms or {})
    text = f"{what}: expected {np.array2string(np.asarray(expected), precision=4)}, got {shorter(got)}."
    if trap:
        text += " " + QUESTION.trap(trap).explanation
    name = what.split("`")[1] if what.count("`") >= 2 else "the answer"
    try:  # which layer differs, and by how much
        where = feedback.locate(name, got, expected, axes=("layer",))
    except Exception:  # noqa: BLE001 (an extra)
        where = None
    return Fail(text + (f"\n{where}" if where else ""), trap)


def layers_list(rng, shapes, scale=1.0):
    return [rng.normal(size=s) * scale for s in shapes]


# -- the measurements ---------------------------------------------------------------------------
def expect_ratios(ctx, before, after, grads, where):
    got = ctx.unpack(ctx.call(RATIOS, before, after, grads), 3, RATIOS, "grad_norms, update_norms, ratios")
    expected = ctx.ref.update_ratios(before, after, grads)
    for name, g, e in zip(("grad_norms", "update_norms", "ratios"), got, expected):
        if not same(g, e):
            forms = update_ratio_forms(before, after, grads) if name == "ratios" else {}
            raise fail(f"`{name}` from {RATIOS} on {where}", g, e, forms)


@QUESTION.check("update_ratios: per-layer gradient and update norms, and the update-to-weight ratio",
                points=2, hints=(
    "What does one step do to a layer, relative to the layer's own size?",
    "The update is the weights after the step minus the weights before; the ratio compares its "
    "norm with the weight's norm.",
    "Every norm is over the whole tensor: one number per layer.",
))
def ratios_values(ctx):
    shapes = [(5, 7), (7, 6), (6, 3)]
    before = layers_list(ctx.rng, shapes)
    grads = layers_list(ctx.rng, shapes, 0.1)
    steps = [float(s) for s in (3e-3, 0.5, 2e-2)]  # a different step per layer, as Adam takes
    after = [w - s * g for w, s, g in zip(before, steps, grads)]
    expect_ratios(ctx, before, after, grads, "three layers with different steps")


@QUESTION.check("update_ratios at the edges: a layer that did not move, a zero weight that did",
                points=1, hints=(
    "A layer whose weights did not change has ratio 0, whatever its gradient.",
    "A weight that is all zeros and moved has no finite ratio: infinity, not NaN.",
))
def ratios_edges(ctx):
    shapes = [(4, 5), (5, 5), (5, 2)]
    before = layers_list(ctx.rng, shapes)
    before[2] = np.zeros((5, 2))  # a zero-initialised layer
    grads = layers_list(ctx.rng, shapes, 0.1)
    after = [before[0] - 0.01 * grads[0], before[1].copy(), before[2] - 0.01 * grads[2]]
    expect_ratios(ctx, before, after, grads, "a normal layer, one that did not move, and a zero weight that moved")


@QUESTION.check("dead_relu_fraction: silent units, and a unit at exactly 0", points=2,
                kinks=("relu-at-0",), hints=(
    "A unit is one column of z. When does it pass no gradient for the whole batch?",
    "relu'(0) = 0: a unit that sits at exactly 0 is as dead as a negative one.",
))
def dead_values(ctx):
    pre_acts = []
    for n, d in ((8, 10), (5, 6), (1, 4)):
        z = ctx.rng.normal(size=(n, d))
        z[:, 0] = -np.abs(z[:, 0])  # dead
        z[:, 1] = 0.0  # dead at exactly 0
        z[:, 2] = -np.abs(z[:, 2])
        z[ctx.rng.integers(n), 2] = 0.5  # fires once: alive
        pre_acts.append(z)
    got = ctx.call(DEAD, pre_acts)
    expected = ctx.ref.dead_relu_fraction(pre_acts)
    if not same(got, expected):
        raise fail(f"{DEAD} on three layers (8 x 10, 5 x 6, 1 x 4)", got, expected, dead_forms(pre_acts))


def expect_error(ctx, a, n, what, forms=None, trap=None):
    got = ctx.call(REL, a, n)
    expected = ctx.ref.relative_error(a, n)
    if not same(got, expected):
        raise fail(f"{REL} on {what}", got, expected, forms, trap)


@QUESTION.check("relative_error: the same answer at every scale", points=1, hints=(
    "Multiply both gradients by 1e6: should your verdict change?",
    "Divide the size of the difference by the size of the gradients.",
))
def error_scale(ctx):
    g = ctx.rng.normal(size=(6, 4))
    for scale in (1e-6, 1.0, 1e6):
        a, n = scale * g, scale * g * (1 + 1e-3 * ctx.rng.normal(size=g.shape))
        expect_error(ctx, a, n, f"two gradients of size about {scale:g}", {"absolute-error": absolute_forms(a, n)})


@QUESTION.check("relative_error with zero entries, and with zero gradients", points=1, hints=(
    "Where one gradient is exactly 0 and the other 1e-13, what does your formula give for that "
    "entry?",
    "Two gradients that are both all zeros agree perfectly; one zero and one not disagree "
    "completely.",
))
def error_zeros(ctx):
    a = ctx.rng.normal(size=(5, 5))
    a[ctx.rng.random((5, 5)) < 0.3] = 0.0
    n = a + 1e-9 * ctx.rng.normal(size=a.shape)
    n[a == 0] = 1e-13  # finite differences are never exactly 0
    got = ctx.call(REL, a, n)
    expected = ctx.ref.relative_error(a, n)
    if not same(got, expected):
        bad = not np.isfinite(np.asarray(got, dtype=np.float64)).all() if isinstance(got, (float, int, np.ndarray)) else False
        trap = "elementwise-ratio" if bad or (isinstance(got, (float, int)) and got > 1e-3) else None
        raise fail(f"{REL} on a gradient with exact zeros where the other has 1e-13", got, expected,
                   {"absolute-error": absolute_forms(a, n)}, trap)
    expect_error(ctx, np.zeros((3, 2)), np.zeros((3, 2)), "two gradients of zeros")
    expect_error(ctx, np.zeros(4), ctx.rng.normal(size=4), "a zero gradient against a nonzero one")


# -- diagnose --------------------------------------------------------------------------------------
def diagnosis(ctx, snapshot, where) -> set:
    """The learner's faults as a set of (fault, layer); a sentence when the form is wrong."""
    got = ctx.call(DIAGNOSE, snapshot)
    if not isinstance(got, (list, tuple)):
        raise Fail(f"{DIAGNOSE} must return a list of [fault, layer] pairs, but returned "
                   f"{type(got).__name__} ({where})")
    faults = set()
    for item in got:
        if not (isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str)
                and (item[1] is None or isinstance(item[1], int))):
            raise Fail(f"{DIAGNOSE} returned {shorter(item)} in its list: each entry is [fault, layer], "
                       f"a fault name and an int (None for lr-too-large) ({where})")
        faults.add((item[0], item[1]))
    return faults


def shown(faults: set) -> str:
    """At most eight pairs, each name at most 40 characters: a learner's list may be anything."""
    pairs = [f"[{f[:40]!r}, {layer!r}]" for f, layer in sorted(faults, key=str)[:8]]
    return "[" + ", ".join(pairs) + (", ..." if len(faults) > 8 else "") + "]"


def expect_diagnosis(ctx, snapshot, where):
    expected = {tuple(f) for f in ctx.ref.diagnose(snapshot)}
    got = diagnosis(ctx, snapshot, where)
    if got != expected:
        layers = len(snapshot["grads"])
        trap = matching(got, diagnosis_forms(expected, layers))
        text = f"{DIAGNOSE} on {where} ({layers} layers): expected {shown(expected)}, got {shown(got)}."
        if trap:
            text += " " + QUESTION.trap(trap).explanation
        raise Fail(text, trap)


def fault_check(fault: str, name: str, hints: tuple):
    """Two patients with ``fault``, in two different layers; lr-too-large's second one also has
    two frozen layers of four, so a median over every layer (the two that did not move
    included) falls below the bound. An answer that says layer 0 whatever happens (zeros)
    cannot pass."""
    @QUESTION.check(name, points=1, hints=hints)
    def run(ctx):
        layers = [int(i) for i in ctx.rng.permutation(3)[:2]]  # two layers, at least one not 0
        for layer, second in zip(layers, (None, [("frozen", i) for i in layers])):
            if fault == "lr-too-large":
                snapshot, _ = probes.patient(ctx.rng, fault, None, layers=4, second=second)
            else:
                snapshot, _ = probes.patient(ctx.rng, fault, layer)
            expect_diagnosis(ctx, snapshot, "a network with a fault planted")
    return run


@QUESTION.check("diagnose: healthy networks get no diagnosis (and a sick one does)", points=1, hints=(
    "Every rule has a margin: a healthy layer is far from each threshold. Which rule fired?",
    "Relative errors of 1e-9, gains near 1.4 and ratios near 5e-4 are all healthy.",
))
def healthy(ctx):
    for _ in range(3):
        expect_diagnosis(ctx, probes.patient(ctx.rng)[0], "a healthy network")
    expect_diagnosis(ctx, probes.patient(ctx.rng, "frozen", 1)[0], "a network with a fault planted")


fault_check("detached", "diagnose: a branch that gets no gradient", (
    "What does backprop give a weight whose path to the loss was cut, and what do finite "
    "differences give?",
    "Compare the layer's gradient with zero, and its numeric gradient with zero.",
))
fault_check("frozen", "diagnose: a frozen weight (a gradient, but no step)", (
    "Which layer has a gradient and yet did not change?",
    "Read the gradient before the update: a layer without a gradient does not move either.",
))
fault_check("stale-activation", "diagnose: a stale activation (an in-place op after the save)", (
    "Nothing about the norms looks wrong. What is the one measurement that checks the backward "
    "itself?",
    "Compare each layer's gradient with its numeric gradient: relative error above 1e-4.",
))
fault_check("bn-train-at-eval", "diagnose: BatchNorm left in training mode at evaluation", (
    "In evaluation mode, may an example's output depend on the other examples in its batch?",
    "Compare each layer's output for the whole batch and for its two halves; the fault is where "
    "they first differ.",
))
fault_check("exploding-init", "diagnose: an exploding initialisation", (
    "Which layer multiplies the scale of what passes through it?",
    "The gain of a layer is rms of its pre-activation over rms of its input.",
))
fault_check("vanishing-init", "diagnose: a vanishing initialisation", (
    "Which layer shrinks the scale of what passes through it?",
    "A gain below 1/8 is vanishing.",
))
fault_check("lr-too-large", "diagnose: a learning rate 100 times too large (alone, and with two frozen layers)", (
    "How large is each step compared with the weight it changes?",
    "Take the median of the update-to-weight ratios over the layers that moved.",
))


@QUESTION.check("diagnose: two faults at once", points=1, hints=(
    "Keep going after the first fault: every rule runs on every layer.",
))
def two_faults(ctx):
    for first, second in ((("frozen", 0), ("lr-too-large", None)), (("detached", 2), ("exploding-init", 0))):
        snapshot, _ = probes.patient(ctx.rng, *first, layers=4, second=second)
        expect_diagnosis(ctx, snapshot, "a network with two faults planted")


@QUESTION.check("diagnose at the thresholds: a gain of exactly 8 or 1/8, a median ratio of "
                "exactly 1/32 and errors half the tolerances are healthy, twice that is not", points=1,
                kinks=("thresholds",), hints=(
    "The rules are strict: more than 8, less than 1/8, more than 1/32, more than 1e-4 and 1e-6.",
    "Compute the gain as a ratio of root mean squares of the whole arrays, and the ratio from "
    "the update's norm.",
))
def thresholds(ctx):
    for kind in ("gain-up", "gain-down", "ratio", "check", "batch"):
        for over in (False, True):
            snapshot, _ = probes.boundary_patient(ctx.rng, kind, over)
            expect_diagnosis(ctx, snapshot, f"a network {'past' if over else 'exactly at'} a threshold")


@QUESTION.check("inputs left unchanged (and the answers right)", points=1, hints=(
    "Does a function change a list or an array it was given (sort, append, -=)?",
    "Compute on copies.",
))
def inputs_unchanged(ctx):
    snapshot, _ = probes.patient(ctx.rng, "frozen", 1)
    calls = [(RATIOS, (snapshot["params_before"], snapshot["params_after"], snapshot["grads"])),
             (DEAD, (snapshot["pre_acts"],)),
             (REL, (snapshot["grads"][0], snapshot["numeric_grads"][0])),
             (DIAGNOSE, (snapshot,))]
    for fn, args in calls:
        result = ctx.call(fn, *args, echo_args=True)
        if not all(unchanged(b, a) for b, a in zip(args, result.args_after or [])):
            raise Fail(f"{fn} wrote into its input. Functions must not change their inputs: the "
                       "caller may still need them. Work on a copy.")
    expect_ratios(ctx, *calls[0][1], "a network's logged step")
    if not same(ctx.call(DEAD, *calls[1][1]), ctx.ref.dead_relu_fraction(*calls[1][1])):
        raise Fail(f"{DEAD} left its input alone but its answer is wrong; this point needs both.")
    expect_error(ctx, *calls[2][1], "a layer's two gradients")
    expect_diagnosis(ctx, snapshot, "a network with a fault planted")
