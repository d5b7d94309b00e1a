"""Hidden checks for backprop_ninja: a tiny language model's every gradient, by hand.

The model (docs/questions/backprop_ninja.md): a tied embedding E, linear -> LayerNorm -> tanh
-> inverted dropout (mask as bits) -> linear -> logits = z @ E.T -> softmax cross-entropy.
The backward is always called with the reference's own cache, so a wrong forward costs the
backward nothing; the parameters' gradients are checked against central differences of the reference forward's loss
(``ctx.ref``, the solution notebook), the intermediates' against the reference backward (itself
checked against PyTorch in tests/questions/test_backprop_ninja.py). When a gradient is wrong, the report
names the first gradient along the backward pass that is wrong, where the mistake is, and
recognises the trap there (``traps.py``); the two dE mistakes are told apart by ids that
repeat and ids that do not (``probes.py``).
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.checks.backprop_ninja import probes
from backprop_traps.grader.checks.backprop_ninja.probes import BWD, CACHE, CHAIN, FWD, PARAMS, problem
from backprop_traps.grader.checks.backprop_ninja.traps import TRAPS, backward_forms, forward_forms
from backprop_traps.grader.engine.question import Fail, Question
from backprop_traps.grader.engine.sameness import unchanged

QUESTION = Question("backprop_ninja", "Backprop ninja: every gradient of a small language model",
                    traps=TRAPS, difficulty="hard",
                    kinks={})  # no kink, tie or threshold (issue 24: validate asks)
ONE = np.asarray(1.0)  # the loss is a scalar: its upstream gradient is 1


def recognised(got: dict, prob, forms: dict) -> tuple[str | None, str | None]:
    """(the first wrong gradient of ``got`` along the backward pass, the trap it matches or None)."""
    first = probes.first_wrong(got, prob)
    if first is None:
        return None, None
    for trap, wrongs in forms.get(first, {}).items():
        if any(probes.is_right(got[first], w) for w in wrongs):
            return first, trap
    return first, None


def explain(failure: Fail, name: str, first: str | None, trap: str | None, where: str) -> Fail:
    """``failure`` with the input's sizes, the first wrong gradient when it lies upstream of
    ``name``, and the trap's explanation."""
    head, _, details = failure.feedback.partition("\n")
    text = f"{head.rstrip('.')}; input {where}."
    if first is not None and first != name:
        text += (f" The first gradient that goes wrong along the backward pass is `{first}`: "
                 f"`{name}` inherits its error.")
    trap = failure.trap or trap
    if trap is not None and QUESTION.trap(trap).explanation not in text:
        text += f" {QUESTION.trap(trap).explanation}"
    return Fail(text + (f"\n{details}" if details else ""), trap)


def expect_grads(ctx, prob, names, diagnose=None, differences=True):
    """The learner's gradients ``names`` on ``prob``: parameters against finite differences of
    the reference loss (or, with ``differences=False``, against the reference backward, as the
    intermediates always are). ``diagnose()`` may name a trap that no wrong form matched."""
    got = probes.learner_grads(ctx, prob)
    forms = backward_forms(prob)
    for name in names:
        try:
            if name[1:] in PARAMS and differences:
                ctx.expect_gradient(name, got[name], prob.loss_of(name[1:]), prob.params[name[1:]],
                                    ONE, BWD, reference=prob.grads[name])
            else:
                ctx.expect_array(name, got[name], prob.grads[name], BWD)
        except Fail as failure:
            first, trap = recognised(got, prob, forms)
            if trap is None and first == name and diagnose is not None:
                trap = diagnose()
            raise explain(failure, name, first, trap, prob.sizes) from None
    return got


# -- checks ----------------------------------------------------------------------------------
@QUESTION.check("forward: the loss and every cached intermediate", points=2, hints=(
    "Follow the forward in the question line by line; the names of the cache are its keys.",
    "Dropout here is inverted: the kept units are scaled at training time, so evaluation needs "
    "nothing.",
    "The loss is the mean over the batch of each example's cross-entropy, a Python float.",
))
def forward_values(ctx):
    for sizes in ((5, 3, 9, 4, 7), (4, 2, 6, 3, 8)):  # B * H = 35 (a padded byte) and 32
        prob = problem(ctx, *sizes)
        loss, cache = probes.learner_forward(ctx, prob)
        forms = forward_forms(prob)
        for key in CACHE:
            try:
                ctx.expect_array(key, cache[key], prob.cache[key], FWD, traps=forms.get(key))
            except Fail as failure:
                raise explain(failure, key, None, None, prob.sizes) from None
        if not probes.is_right(loss, prob.loss):
            shown = repr(loss) if len(repr(loss)) <= 80 else f"a {type(loss).__name__} that is not the number"
            raise Fail(f"the loss from {FWD} is {shown}, expected {prob.loss:.6g} (a Python float); "
                       f"input {prob.sizes}.")


@QUESTION.check("dlogits (a batch of several examples)", points=1, hints=(
    "Differentiate -log softmax(logits)[target] with respect to each logit of the row.",
    "The loss is a mean over B examples: every example's gradient carries that 1/B.",
))
def dlogits_values(ctx):
    expect_grads(ctx, problem(ctx, 6, 3, 11, 4, 10), ["dlogits"])


@QUESTION.check("the output side: dz, dW2, db2 and dhdrop", points=2, hints=(
    "logits = z E^T is a matrix product: each of its inputs gets the upstream gradient "
    "multiplied by the other input, transposed where the shapes say so.",
    "b2 is added to every row of z: its gradient adds up the rows.",
))
def output_side(ctx):
    expect_grads(ctx, problem(ctx, 6, 3, 11, 4, 10), ["dz", "dW2", "db2", "dhdrop"])


@QUESTION.check("dropout's backward: dh", points=2, hints=(
    "What did the forward do to each kept unit besides keeping it?",
    "The backward of y = c * x, for a constant c, multiplies the upstream gradient by c: here "
    "c is the mask times the forward's scale.",
    "Read the same bits again; a new random mask would be a different function.",
))
def dropout_backward(ctx):
    expect_grads(ctx, problem(ctx, 6, 3, 11, 4, 10, p_drop=0.5), ["dh"])


@QUESTION.check("tanh's backward: dhln", points=2, hints=(
    "Write tanh's derivative in terms of tanh itself: which tensor in the cache holds tanh's "
    "value?",
    "1 - u^2 is the derivative only when u is the tanh of the input.",
))
def tanh_backward(ctx):
    expect_grads(ctx, problem(ctx, 6, 3, 11, 4, 10), ["dhln"])


@QUESTION.check("LayerNorm's backward: dgamma, dbeta and dhpre", points=2, hints=(
    "gamma and beta are shared by every row: their gradients add up the rows.",
    "The mean and the variance of each row are computed from hpre: moving one hpre moves both.",
    "Every row of dhpre sums to zero.",
))
def layernorm_backward(ctx):
    expect_grads(ctx, problem(ctx, 6, 3, 11, 4, 10), ["dgamma", "dbeta", "dhpre"])


@QUESTION.check("the first linear layer: dW1, db1, dx and demb", points=2, hints=(
    "hpre = x W1 + b1 is the same pattern as the second linear layer.",
    "demb holds dx's numbers in emb's shape: the reshape moves nothing.",
))
def first_linear(ctx):
    expect_grads(ctx, problem(ctx, 6, 3, 11, 4, 10), ["dW1", "db1", "dx", "demb"])


@QUESTION.check("dE where token ids repeat", points=2, hints=(
    "A token named at three positions had its row of E copied three times. How many gradients "
    "must that row collect?",
    "In numpy, an indexed += with repeated indices adds only once: look for numpy's unbuffered "
    "way to add at indices, or build the sum another way.",
    "Check with one id repeated at every position: its row of dE is the sum of all of demb.",
))
def embedding_repeats(ctx):
    prob = problem(ctx, 6, 3, 11, 4, 10)
    distinct = problem(ctx, 3, 3, 11, 4, 10, ids="distinct")

    def only_repeats_break():
        """The same mistake cannot show where no id repeats: right there means overwrite."""
        got = probes.learner_grads(ctx, distinct)
        return "embedding-overwrite" if probes.is_right(got["dE"], distinct.grads["dE"]) else None
    expect_grads(ctx, prob, ["dE"], diagnose=only_repeats_break)


@QUESTION.check("dE of the tied matrix: the output layer's gradient plus the embedding's",
                points=2, hints=(
    "Where does E appear in the forward? Count the places.",
    "A parameter used twice gets the sum of the two gradients.",
))
def tied_matrix(ctx):
    expect_grads(ctx, problem(ctx, 4, 2, 11, 4, 10, ids="distinct"), ["dE"])


@QUESTION.check("edge cases: p_drop = 0, one example of one token, one id everywhere, "
                "and a 32 x 8 batch", points=1, hints=(
    "With B = 1 and T = 1 every array keeps its number of dimensions: reshape, do not squeeze.",
    "With p_drop = 0 every bit is 1 and the scale is 1.",
))
def edge_cases(ctx):
    cases = [problem(ctx, 1, 1, 5, 3, 4, p_drop=0.0), problem(ctx, 3, 4, 2, 2, 3, p_drop=0.5),
             problem(ctx, 32, 8, 40, 8, 24), problem(ctx, 3, 4, 7, 2, 5, ids="same")]
    for prob in cases:  # the parameters were checked by finite differences in their own checks
        expect_grads(ctx, prob, CHAIN, differences=False)
        loss, cache = probes.learner_forward(ctx, prob)
        if not (probes.is_right(loss, prob.loss) and all(probes.is_right(cache[k], prob.cache[k])
                                                         for k in CACHE)):
            raise Fail(f"{FWD} is wrong on input {prob.sizes}; its other checks say where.")


@QUESTION.check("inputs left unchanged (and the answers right)", points=1, hints=(
    "Does either function change params, the cache, idx or the mask in place (+=, /=, np.add.at)?",
    "Build results in new arrays, or copy first: dlogits from a copy of the probabilities.",
))
def inputs_unchanged(ctx):
    prob = problem(ctx, 4, 3, 9, 3, 6)
    names = {FWD: ("params", "idx", "targets", "keep_bits", "p_drop", "eps"),
             BWD: ("params", "cache", "idx", "targets", "keep_bits", "p_drop")}
    for fn, args in ((FWD, prob.forward_args()), (BWD, prob.backward_args())):
        result = ctx.call(fn, *args, echo_args=True)
        for name, before, after in zip(names[fn], args, result.args_after or []):
            if not unchanged(before, after):
                raise Fail(f"{fn} wrote into its input `{name}`. Functions must not change their "
                           "inputs: the caller may still need them. Work on a copy.")
    loss, cache = probes.learner_forward(ctx, prob)
    if not (probes.is_right(loss, prob.loss) and all(probes.is_right(cache[k], prob.cache[k]) for k in CACHE)):
        raise Fail(f"{FWD} left its inputs alone but its answer is wrong; this point needs both.")
    expect_grads(ctx, prob, CHAIN, differences=False)
