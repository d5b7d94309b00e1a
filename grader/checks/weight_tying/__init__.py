"""Hidden checks for weight_tying: one matrix E read by a language model's embedding lookup and
by its output projection (logits = h @ E.T), its gradient, and training that keeps it one matrix.

Shape letters: V tokens, D features, N positions (docs/questions/weight_tying.md). The
backward is called with the reference's own cache; dE and dW are checked against central
differences of the reference forward's loss (``ctx.ref``, the solution notebook), with V != D
and repeated ids, and again with V = D, where the transposed layout of the projection's
gradient has E's shape and only its values tell it apart. Training is compared, step by step,
with the reference's own loop. Wrong answers are named by equality with a trap's form on the
same inputs (``traps``), each trap with a runnable wrong answer in tests/answers/weight_tying/.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.checks.weight_tying import probes, traps
from backprop_traps.grader.checks.weight_tying.probes import CACHE, problem
from backprop_traps.grader.checks.weight_tying.traps import BWD, FWD, TRAIN
from backprop_traps.grader.engine.question import Fail, Question
from backprop_traps.grader.engine.sameness import same_answer

QUESTION = Question("weight_tying", "Weight tying: one matrix read by the embedding and by the output "
                    "projection", traps=traps.TRAPS, difficulty="medium",
                    kinks={},  # tanh and softmax are smooth: no kink, tie or threshold
                    axes={"dE": ("token v", "feature d"), "E_embed": ("token v", "feature d"),
                          "E_out": ("token v", "feature d"), "losses": ("step k",)})
ONE = np.float64(1.0)  # the loss is a scalar: its upstream gradient is 1


def expect_dE(ctx, prob, forms):
    dE, _ = probes.learner_backward(ctx, prob)
    try:
        ctx.expect_gradient("dE", dE, prob.loss_of_E, prob.E, ONE, BWD, traps=forms["dE"], reference=prob.dE)
    except Fail as failure:
        raise probes.at(prob, failure) from None


def expect_dW(ctx, prob, forms):
    _, dW = probes.learner_backward(ctx, prob)
    try:
        ctx.expect_gradient("dW", dW, prob.loss_of_W, prob.W, ONE, BWD, traps=forms["dW"], reference=prob.dW)
    except Fail as failure:
        raise probes.at(prob, failure) from None


@QUESTION.check("tied_lm_forward: the loss and the cache (V = 7, D = 4 and V = 3, D = 5)", points=2, hints=(
    "Follow the forward in the question line by line: the cache's keys are its names.",
    "The lookup reads E's rows; the projection multiplies by E transposed, so the logits have V "
    "columns.",
    "The loss is the mean over the positions of each one's cross-entropy, a Python float.",
))
def forward_values(ctx):
    for V, D, N in ((7, 4, 6), (3, 5, 4)):
        prob = problem(ctx, V, D, N)
        loss, cache = probes.learner_forward(ctx, prob)
        for key in CACHE:
            try:
                ctx.expect_array(key, cache[key], prob.cache[key], FWD)
            except Fail as failure:
                raise probes.at(prob, failure) from None
        try:
            ctx.expect_array("loss", loss, np.asarray(prob.loss), FWD)
        except Fail as failure:
            raise probes.at(prob, failure, " The loss is a Python float.") from None


@QUESTION.check("tied_lm_backward: dE with V = 11, D = 4, ids repeated", points=3, hints=(
    "Where does the forward read E? Count the places, and what each one computes from it.",
    "A matrix read in two places gets a gradient from each place; the chain rule adds them.",
    "The lookup's gradient goes to the rows of the ids, one row of dx per position.",
))
def dE_repeated(ctx):
    prob = problem(ctx, 11, 4, 8)
    expect_dE(ctx, prob, traps.backward_forms(prob.E, prob.W, prob.ids, prob.targets))


@QUESTION.check("tied_lm_backward: dE and dW with V = D = 6, ids distinct", points=2, hints=(
    "Write logits = h @ E.T entry by entry: which index of E goes with the token, which with the "
    "feature?",
    "The gradient of E has E's layout, (V, D): rows are tokens. Check each product's shapes with V "
    "and D different, even when they are equal here.",
))
def square_vocabulary(ctx):
    prob = problem(ctx, 6, 6, 5, ids="distinct")
    forms = traps.backward_forms(prob.E, prob.W, prob.ids, prob.targets)
    expect_dE(ctx, prob, forms)
    expect_dW(ctx, prob, forms)


@QUESTION.check("tied_lm_backward: dW with V = 9, D = 3", points=1, hints=(
    "h = tanh(x @ W): the gradient reaches W through tanh's derivative, from its output h.",
    "dW has W's shape, (D, D): the lookup's vectors, transposed, times the gradient at x @ W.",
))
def dW_values(ctx):
    prob = problem(ctx, 9, 3, 7)
    expect_dW(ctx, prob, traps.backward_forms(prob.E, prob.W, prob.ids, prob.targets))


STEPS, LR = 3, 0.4


@QUESTION.check("tied_lm_train: three steps, the matrix each use reads, W and the losses", points=3, hints=(
    "After one step, which matrix does the embedding read, and which does the projection read? "
    "Print both after two steps.",
    "Both uses must read one matrix, moved by E's whole gradient; a copy made once is a second "
    "parameter.",
    "Rebinding a name to a new array leaves every other name on the old one.",
))
def training(ctx):
    prob = problem(ctx, 9, 4, 7)
    got = ctx.unpack(ctx.call(TRAIN, prob.E, prob.W, prob.ids, prob.targets, LR, STEPS), 4, TRAIN,
                     "E_embed, E_out, W, losses")
    want = ctx.ref.tied_lm_train(prob.E, prob.W, prob.ids, prob.targets, LR, STEPS)
    forms = traps.train_forms(prob.E, prob.W, prob.ids, prob.targets, LR, STEPS)
    for name, g, w in zip(("losses", "E_embed", "E_out", "W"), (got[3], *got[:3]), (want[3], *want[:3])):
        try:
            ctx.expect_array(name, g, np.asarray(w), TRAIN, traps=forms[name])
        except Fail as failure:
            raise probes.at(prob, failure, f" lr = {LR}, steps = {STEPS}.") from None


def right_forward(got, prob) -> bool:
    """Whether the learner's (loss, cache) is the reference's: the cache a dict with every key."""
    return (isinstance(got, (tuple, list)) and len(got) == 2 and isinstance(got[1], dict)
            and same_answer(got[0], prob.loss) and all(same_answer(got[1].get(k), prob.cache[k]) for k in CACHE))


@QUESTION.check("inputs left unchanged (and the answers right)", points=1, hints=(
    "Does a function change E, W, the cache or the ids in place (+=, -=, np.add.at on an input)?",
    "Build results in new arrays; a training loop starts from copies.",
))
def inputs_unchanged(ctx):
    prob = problem(ctx, 5, 3, 4)
    args = (prob.E, prob.W, prob.ids, prob.targets)
    ctx.expect_inputs_unchanged([
        (FWD, args, ["E", "W", "ids", "targets"], lambda got: right_forward(got, prob)),
        (BWD, (prob.E, prob.W, prob.cache, prob.ids, prob.targets), ["E", "W", "cache", "ids", "targets"],
         (prob.dE, prob.dW)),
        (TRAIN, args + (LR, 2), ["E", "W", "ids", "targets"],
         ctx.ref.tied_lm_train(*args, LR, 2)),
    ])
