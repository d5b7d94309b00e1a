"""Hidden checks for moe_router_backward: a top-k router's forward (the selected experts, their
gates and the load-balancing loss) and its backward to the tokens and the router's weights.

Shapes: x (N, D), Wr (D, E), idx and gates and dgates (N, k). The forward is compared with the
reference (``ctx.ref``, the solution notebook); dx and dWr with central differences of the
reference's loss ``sum(dgates * gates) + aux_loss`` on tie-free logits (``probes``), the
backward called with the reference's own idx. Wrong answers are named by equality with a
trap's form on the same inputs (``traps``); each trap has a runnable wrong answer in
tests/answers/moe_router_backward/.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.checks.moe_router_backward import probes, traps
from backprop_traps.grader.checks.moe_router_backward.traps import BWD, FWD
from backprop_traps.grader.engine.question import Fail, Question

ONE = np.float64(1.0)  # the upstream of a scalar loss
ROWS = [("dgates", 0), ("x", 0), ("idx", 0)]

QUESTION = Question(
    "moe_router_backward", "Mixture-of-experts routing: the top-k gates' backward and the "
    "load-balancing loss", traps=traps.TRAPS, difficulty="medium",
    kinks={"topk-tie": "a token's k-th and (k + 1)-th largest logits exactly equal (the "
                       "selection's edge; the lower expert index ranks first)"},
    axes={"dx": ("token n", "feature d"), "dWr": ("feature d", "expert e"),
          "gates": ("token n", "slot j"), "idx": ("token n", "slot j")},
    dtypes={FWD: {"idx": "int64"}})


def where(N, D, E, k, aux_coef) -> str:
    return f"N={N}, D={D}, E={E}, k={k}, aux_coef={aux_coef:g}"


def with_place(failure: Fail, at: str) -> Fail:
    """The failure with the input's sizes in front (the trap's explanation left whole, so the
    report can show its symptom in its place)."""
    return Fail(f"With {at}: {failure.feedback}", failure.trap)


def learner_forward(ctx, x, Wr, k, aux_coef):
    return ctx.unpack(ctx.call(FWD, x, Wr, k, aux_coef), 3, FWD, "gates, idx, aux_loss")


def learner_backward(ctx, dgates, x, Wr, idx, aux_coef):
    return ctx.unpack(ctx.call(BWD, dgates, x, Wr, idx, aux_coef), 2, BWD, "dx, dWr")


def expect_forward(ctx, x, Wr, k, aux_coef, at, selection=True, loss=True):
    gates, idx, aux_loss = learner_forward(ctx, x, Wr, k, aux_coef)
    want_gates, want_idx, want_loss = ctx.ref.router_forward(x, Wr, k, aux_coef)
    try:
        if selection:
            ctx.expect_array("idx", idx, want_idx, FWD, integer=True)
            ctx.expect_array("gates", gates, want_gates, FWD, traps=traps.forward_forms(x, Wr, want_idx))
        if loss:
            ctx.expect_array("aux_loss", aux_loss, np.asarray(want_loss), FWD)
    except Fail as failure:
        raise with_place(failure, at) from None


def expect_backward(ctx, dgates, x, Wr, idx, k, aux_coef, at):
    """dx and dWr against central differences of the reference's loss (tie-free inputs)."""
    dx, dWr = learner_backward(ctx, dgates, x, Wr, idx, aux_coef)
    forms = traps.backward_forms(dgates, x, Wr, idx, aux_coef)
    want_dx, want_dWr = ctx.ref.router_backward(dgates, x, Wr, idx, aux_coef)

    def loss(x_, Wr_):
        gates, _, aux_loss = ctx.ref.router_forward(x_, Wr_, k, aux_coef)
        return aux_loss + float(np.sum(gates * dgates))
    try:
        ctx.expect_gradient("dx", dx, lambda v: loss(v, Wr), x, ONE, BWD, traps=forms["dx"],
                            reference=want_dx)
        ctx.expect_gradient("dWr", dWr, lambda v: loss(x, v), Wr, ONE, BWD, traps=forms["dWr"],
                            reference=want_dWr)
    except Fail as failure:
        raise with_place(failure, at) from None


def run_backward(ctx, N, D, E, k, aux_coef):
    x, Wr = probes.tie_free(ctx.rng, N, D, E, k)
    idx = ctx.ref.router_forward(x, Wr, k, aux_coef)[1]
    dgates = probes.upstream_gates(ctx.rng, N, k)
    expect_backward(ctx, dgates, x, Wr, idx, k, aux_coef, where(N, D, E, k, aux_coef))


@QUESTION.check("router_forward: idx and gates, k = 2 of 8 experts", points=2, hints=(
    "Which logits does a token's gate depend on: all E, or only the k it keeps?",
    "Each row of gates should sum to 1.",
    "Sort each token's logits largest first; the gates are a softmax over the first k of them.",
))
def forward_selection(ctx):
    N, D, E, k = 6, 5, 8, 2
    x, Wr = probes.tie_free(ctx.rng, N, D, E, k)
    expect_forward(ctx, x, Wr, k, 0.01, where(N, D, E, k, 0.01), loss=False)


@QUESTION.check("router_forward: aux_loss, k = 2 and k = 1", points=1, hints=(
    "f_i counts routing slots: the tokens whose idx holds expert i, over N * k.",
    "P_i is a mean over tokens of the probability over all E experts, not of the gates.",
    "At a perfectly even routing the loss equals aux_coef.",
))
def forward_aux_loss(ctx):
    for N, D, E, k, aux_coef in ((8, 4, 6, 2, 0.1), (5, 3, 4, 1, 0.7)):
        x, Wr = probes.tie_free(ctx.rng, N, D, E, k)
        expect_forward(ctx, x, Wr, k, aux_coef, where(N, D, E, k, aux_coef), selection=False)


@QUESTION.check("router_backward with aux_coef = 0: dx and dWr, k = 2 of 6 experts", points=3, hints=(
    "Which logits did the gates of this token read? Only those can get a gradient from them.",
    "On the k selected logits the gates are a softmax: its backward is g * (dgates - sum(g * dgates)).",
    "Put the k values in the columns idx names; the other E - k columns get 0.",
))
def backward_gates(ctx):
    run_backward(ctx, 6, 4, 6, 2, 0.0)


@QUESTION.check("router_backward with aux_coef = 0.5: dx and dWr, k = 2 of 6 experts", points=3, hints=(
    "aux_loss is part of the loss whose gradient router_backward returns.",
    "f holds counts: constant. P_i is a mean of softmax probabilities over all experts: its "
    "gradient reaches every logit.",
    "The two parts of the gradient at the logits add before dx and dWr are formed.",
))
def backward_with_aux(ctx):
    run_backward(ctx, 7, 4, 6, 2, 0.5)


@QUESTION.check("router_forward and router_backward with k = 1 and with k = E", points=1, hints=(
    "With k = 1 there is one gate per token: what is a softmax over one logit?",
    "With k = E every expert is selected: the gates are the softmax over all of them.",
))
def edge_k(ctx):
    for N, D, E, k, aux_coef in ((6, 3, 5, 1, 0.3), (5, 3, 4, 4, 0.3)):
        at = where(N, D, E, k, aux_coef)
        x, Wr = probes.tie_free(ctx.rng, N, D, E, k)
        expect_forward(ctx, x, Wr, k, aux_coef, at)
        idx = ctx.ref.router_forward(x, Wr, k, aux_coef)[1]
        expect_backward(ctx, probes.upstream_gates(ctx.rng, N, k), x, Wr, idx, k, aux_coef, at)


@QUESTION.check("equal logits at the k-th place: idx, gates, dx and dWr", points=1,
                kinks=("topk-tie",), hints=(
    "Which expert is selected when two logits are equal at the edge of the top k?",
    "Equal logits rank by expert index, the lower index first (a stable sort of -logits).",
    "The backward follows the idx it is given.",
))
def tie_at_the_edge(ctx):
    N, D, E, k, aux_coef = 8, 3, 6, 2, 0.5
    x, Wr = probes.tied(ctx.rng, N, D, E, k)
    at = where(N, D, E, k, aux_coef) + ", integer logits tied at the k-th place"
    expect_forward(ctx, x, Wr, k, aux_coef, at)
    idx = ctx.ref.router_forward(x, Wr, k, aux_coef)[1]
    dgates = np.round(probes.upstream_gates(ctx.rng, N, k), 1)
    dx, dWr = learner_backward(ctx, dgates, x, Wr, idx, aux_coef)
    want_dx, want_dWr = ctx.ref.router_backward(dgates, x, Wr, idx, aux_coef)
    forms = traps.backward_forms(dgates, x, Wr, idx, aux_coef)
    try:
        ctx.expect_array("dx", dx, want_dx, BWD, traps=forms["dx"])
        ctx.expect_array("dWr", dWr, want_dWr, BWD, traps=forms["dWr"])
    except Fail as failure:
        raise with_place(failure, at) from None


@QUESTION.check("inputs left unchanged (and the answers right)", points=1, hints=(
    "Does a function change x, Wr, idx or dgates in place (+=, a sort in place)?",
    "Build results in new arrays.",
))
def inputs_unchanged(ctx):
    N, D, E, k, aux_coef = 5, 3, 6, 2, 0.2
    x, Wr = probes.tie_free(ctx.rng, N, D, E, k)
    gates, idx, aux_loss = ctx.ref.router_forward(x, Wr, k, aux_coef)
    dgates = probes.upstream_gates(ctx.rng, N, k)

    def forward_right(value):
        return (isinstance(value, (tuple, list)) and len(value) == 3
                and np.array_equal(np.asarray(value[1]), idx)
                and np.allclose(np.asarray(value[0], dtype=np.float64), gates)
                and np.isclose(float(value[2]), aux_loss))
    ctx.expect_inputs_unchanged([
        (FWD, (x, Wr, k, aux_coef), ["x", "Wr"], forward_right),
        (BWD, (dgates, x, Wr, idx, aux_coef), ["dgates", "x", "Wr", "idx"],
         ctx.ref.router_backward(dgates, x, Wr, idx, aux_coef)),
    ])
