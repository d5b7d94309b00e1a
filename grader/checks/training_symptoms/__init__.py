"""Hidden checks for training_symptoms: name a run's cause from its logs over time, and the
block that starts as the identity.

``diagnose`` is graded on runs the grader trains itself (``runs.py``): small residual networks
with one cause planted, and the trace their training loop logged. Every check mixes the runs
of its cause with a run of the cause it is most often taken for, so that no answer that ignores
the symptoms can pass one: the two share an index, so everything but their losses and norms is
alike (``runs.shared``), and an answer that reads only that gives both one name and scores 0
(tests/questions/test_training_symptoms.py). The expected answer is the
planted cause. A wrong diagnosis says which run, what was expected, names the confusion when it
is one of the traps (``traps.CONFUSIONS``), and shows what the run logged (``probes.evidence``).
The gated block, ``h + gain * relu(h @ W1) @ W2`` with a per-channel gain, is checked against
central differences of the reference forward (``ctx.ref``, the solution notebook), at gain 0
against the reference, and at pre-activations of exactly 0.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.checks.training_symptoms import prefetch, probes, runs, shipped, traps
from backprop_traps.grader.checks.training_symptoms.traps import BWD, DIAGNOSE, FWD, GRADS
from backprop_traps.grader.engine.gradcheck import upstream
from backprop_traps.grader.engine.question import Fail, Question

QUESTION = Question("training_symptoms", "Training symptoms: a run's cause from its logs over time",
                    traps=traps.TRAPS, difficulty="medium",
                    kinks={"relu-at-0": "a pre-activation h @ W1 exactly 0 in the gated block (the mask is z > 0)"})


def shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."


def expect_diagnoses(ctx, runs_to_read, what):
    """``runs_to_read``: (cause, index) pairs; each run's diagnosis must be its planted cause.
    A trap is named only when it explains every wrong diagnosis of the check and the answer
    tells runs apart (it got another of its runs right, or gave the runs different names, as a
    complete swap of two causes does): a confusion, not an answer that reads something else."""
    if runs.in_practice(ctx):  # a first try trains every check's runs at once, on more than one core
        prefetch.train_all(ctx.seed, runs_read())
    answers = []
    for number, (cause, index) in enumerate(runs_to_read, 1):
        got = ctx.call(DIAGNOSE, runs.trace_for(ctx, cause, index))
        if not isinstance(got, str) or got not in runs.CAUSES:
            raise Fail(f"{DIAGNOSE} must return one of {', '.join(runs.CAUSES)}; on run {number} of "
                       f"{len(runs_to_read)} ({what}) it returned {shown(got)}.")
        answers.append(got)
    wrong = [(number, cause, index, got) for number, ((cause, index), got)
             in enumerate(zip(runs_to_read, answers), 1) if got != cause]
    if not wrong:
        return
    number, cause, index, got = wrong[0]
    named = {traps.confusion(c, g) for _, c, _, g in wrong}
    tells_apart = len(wrong) < len(runs_to_read) or len(set(answers)) > 1
    trap = named.pop() if len(named) == 1 and None not in named and tells_apart else None
    text = (f"{DIAGNOSE} on run {number} of {len(runs_to_read)} ({what}): expected {cause!r}, got {got!r}"
            + (f"; {len(wrong) - 1} more of these runs wrong too." if len(wrong) > 1 else "."))
    if trap:
        text += " " + QUESTION.trap(trap).explanation
    raise Fail(text + "\n" + probes.evidence(runs.trace_for(ctx, cause, index)), trap)


PLAN: dict = {}
"""Each diagnosis check's runs, (cause, index); two runs of one index differ only in symptoms."""


def runs_read() -> list[tuple[str, int]]:
    """Every run the diagnosis checks read, once each, in order."""
    return sorted({run for cases in PLAN.values() for run in cases})


def shipped_stale() -> bool:
    """Whether the runs shipped for the default seed are not every run the checks read, each a
    trace, as this code trains them (``grade release`` makes them again: ``ship_runs``)."""
    from backprop_traps.grader.engine.run import DEFAULT_SEED
    return any(runs.shipped_trace(DEFAULT_SEED, *run) is None for run in runs_read())


def ship_runs(path=None):
    """Train the default seed's runs the checks read and keep them with the kit (shipped.py)."""
    from backprop_traps.grader.engine.run import DEFAULT_SEED
    return shipped.save(DEFAULT_SEED, {run: runs.trained(DEFAULT_SEED, *run) for run in runs_read()}, path)


def diagnosis_check(name, points, cases, what, hints):
    PLAN[name] = cases

    @QUESTION.check(name, points=points, hints=hints)
    def run(ctx):
        expect_diagnoses(ctx, cases, what)
    return run


diagnosis_check("diagnose: healthy runs, each grown by a block that starts at zero (and one that is not)", 1,
                [("healthy", 0), ("healthy", 1), ("block-not-identity", 0), ("healthy", 2)],
                "runs with a block added part way", (
    "A healthy run's loss starts near ln C, falls with the noise of its batches, and its "
    "validation loss follows it down.",
    "Every run grows by a block; in a healthy one nothing happens at that step.",
))
diagnosis_check("diagnose: weights initialised far too large", 2,
                [("init-scale", 0), ("log-zero", 0), ("init-scale", 1)], "runs that break near the start", (
    "What should the loss of an untrained classifier be, and what is it at step 0 here?",
    "Compare the first loss with ln C, and look at the gradients' norms at step 0.",
))
diagnosis_check("diagnose: weights initialised too large, in a run that stays finite", 1,
                [("init-scale", 2), ("healthy", 2), ("init-scale", 0)], "runs that start far from ln C, or not", (
    "Not every bad init ends in NaN: what is the first loss of each run here?",
    "An untrained classifier's loss is about ln C: compare each run's first loss with it.",
))
diagnosis_check("diagnose: a loss that takes the log of 0", 2,
                [("log-zero", 0), ("init-scale", 0), ("log-zero", 1)], "runs that break near the start", (
    "The loss is NaN from the first step: is anything else about the run wrong?",
    "Look at the gradients' norms while the loss is NaN.",
))
diagnosis_check("diagnose: a batch past float16's range, hundreds of steps in", 2,
                [("fp16-overflow", 0), ("init-scale", 1), ("fp16-overflow", 1)], "runs that end in NaN", (
    "At which step does the first non-finite loss appear, and how did the run look before it?",
    "A NaN after a long healthy stretch has a different cause from a NaN in the first steps.",
))
diagnosis_check("diagnose: a loader that repeats one batch", 2,
                [("repeated-batch", 0), ("bn-train-mode", 0), ("repeated-batch", 1)],
                "runs whose validation loss does not follow the training loss", (
    "How often does a minibatch loss go up from one step to the next?",
    "Count the steps where the training loss rises, over the first hundred.",
))
diagnosis_check("diagnose: BatchNorm left in training mode for validation", 2,
                [("bn-train-mode", 0), ("repeated-batch", 0), ("bn-train-mode", 1)],
                "runs whose validation loss does not follow the training loss", (
    "The training loss is ordinary here. What does the validation loss do?",
    "Compare the validation loss at the end with its start, and with the training loss.",
))
diagnosis_check("diagnose: a block added at full scale", 2,
                [("block-not-identity", 0), ("healthy", 1), ("block-not-identity", 1)],
                "runs with a block added part way", (
    "Where in the run should you look, given that every run grows by a block at some step?",
    "Compare the loss at the step the depth changes with the losses just before it.",
))


# -- the block that starts as the identity ----------------------------------------------------------
def expect_block_backward(ctx, h, W1, W2, gain, at, differences=True, gain_kind="random"):
    dout = upstream(ctx.rng, h.shape)
    got = ctx.unpack(ctx.call(BWD, dout, h, W1, W2, gain), 4, BWD, ", ".join(GRADS))
    forms = traps.backward_forms(dout, h, W1, W2, gain)
    expected = ctx.ref.gated_block_backward(dout, h, W1, W2, gain)
    args = [h, W1, W2, gain]
    for i, name in enumerate(GRADS):
        try:
            if differences:
                def out_of(value, i=i):
                    changed = list(args)
                    changed[i] = value
                    return ctx.ref.gated_block_forward(*changed)
                ctx.expect_gradient(name, got[i], out_of, args[i], dout, BWD, traps=forms.get(name),
                                    reference=expected[i], example=probes.backward_example(ctx, i, name, gain_kind))
            else:
                ctx.expect_array(name, got[i], expected[i], BWD, traps=forms.get(name),
                                 example=probes.backward_example(ctx, i, name, gain_kind))
        except Fail as failure:
            head, _, rest = failure.feedback.partition("\n")
            raise Fail(f"{head.rstrip('.')} ({at})." + (f"\n{rest}" if rest else ""), failure.trap) from None


@QUESTION.check("gated_block_forward: at a per-channel gain, and at gain 0", points=1, hints=(
    "The gain multiplies the branch's output, channel by channel, before it is added to h.",
    "At gain 0 the block must return h exactly.",
))
def block_forward(ctx):
    for gain in (None, np.zeros(5)):
        h, W1, W2, g = probes.block(ctx.rng, 4, 5, 6, gain)
        got = ctx.call(FWD, h, W1, W2, g)
        ctx.expect_array("out", got, ctx.ref.gated_block_forward(h, W1, W2, g), FWD)


@QUESTION.check("gated_block_backward: every gradient, the gain's included, against finite differences",
                points=2, hints=(
    "out = h + gain * F(h): which gradient reaches F's output?",
    "The gain's gradient sums dout * F(h) over the batch, one number per channel.",
))
def block_backward(ctx):
    h, W1, W2, gain = probes.block(ctx.rng, 4, 5, 6)
    expect_block_backward(ctx, h, W1, W2, gain, "N=4, D=5, H=6, a per-channel gain")


@QUESTION.check("gated_block_backward at gain 0: the block's gradients at its first step", points=2, hints=(
    "At gain 0 the block is the identity: what is dh?",
    "Which of the block's parameters can move at the first step, and which cannot yet?",
))
def block_at_zero(ctx):
    h, W1, W2, gain = probes.block(ctx.rng, 5, 4, 6, np.zeros(4))
    expect_block_backward(ctx, h, W1, W2, gain, "N=5, D=4, H=6, gain 0", differences=False, gain_kind="zero")


@QUESTION.check("gated_block_backward at pre-activations of exactly 0", points=1, kinks=("relu-at-0",), hints=(
    "Which comparison makes the forward's max(z, 0) pass nothing at z = 0?",
    "The mask is z > 0: at exactly 0 no gradient passes, as in PyTorch.",
))
def block_kink(ctx):
    h, W1, W2, gain = probes.on_the_kink(ctx.rng, 4, 3, 4)
    expect_block_backward(ctx, h, W1, W2, gain, "N=4, D=3, H=4, pre-activations exactly 0 in places",
                          differences=False, gain_kind="half")


@QUESTION.check("inputs left unchanged (and the answers right)", points=1, hints=(
    "Does a function change the trace, or h, a weight or the gain, in place?",
    "Compute on copies.",
))
def inputs_unchanged(ctx):
    trace = runs.trace_for(ctx, "healthy", 0)
    h, W1, W2, gain = probes.block(ctx.rng, 3, 4, 5)
    dout = upstream(ctx.rng, h.shape)
    ctx.expect_inputs_unchanged([
        (DIAGNOSE, (trace,), ["trace"], lambda got: got == "healthy"),
        (FWD, (h, W1, W2, gain), ["h", "W1", "W2", "gain"], ctx.ref.gated_block_forward(h, W1, W2, gain)),
        (BWD, (dout, h, W1, W2, gain), ["dout", "h", "W1", "W2", "gain"],
         ctx.ref.gated_block_backward(dout, h, W1, W2, gain)),
    ])
