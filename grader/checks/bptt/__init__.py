"""Hidden checks for bptt: an Elman RNN's forward, backpropagation through time truncated to
chunks of k steps, and clipping by the global norm.

Shapes: x (T, N, D), h0 (N, H), hs and dhs (T, N, H), W_xh (D, H), W_hh (H, H), b (H,). The
backward is called with the reference's own hs and a random dhs; full BPTT (k >= T) is
compared with central differences of the reference forward (``ctx.ref``, the solution
notebook), truncated BPTT with central differences of the same forward run chunk by chunk,
each chunk's incoming state held fixed (``probes.chunked_forward``). Wrong answers are named
by equality with a trap's form on the same inputs (``traps``); each trap has a runnable
wrong answer in tests/answers/bptt/.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.checks.bptt import probes, traps
from backprop_traps.grader.checks.bptt.traps import BWD, CLIP, FWD, GRADS
from backprop_traps.grader.engine.gradcheck import upstream
from backprop_traps.grader.engine.question import Fail, Question

QUESTION = Question("bptt", "BPTT: the recurrent weight's gradient sums over every step",
                    traps=traps.TRAPS, difficulty="medium",
                    kinks={"chunk-boundary": "the step where a truncated chunk ends (no gradient crosses it)",
                           "clip-threshold": "a global norm of exactly max_norm (unchanged)"},
                    # a prefix of the steps, or of the rows, is still a sequence and its forward
                    shrink={FWD: {"T": [(0, 0)], "N": [(0, 1), (1, 0)]},
                            BWD: {"T": [(0, 0), (1, 0), (3, 0)], "N": [(0, 1), (1, 1), (2, 0), (3, 1)]}},
                    axes={"dx": ("step t", "row n", "feature"), "hs": ("step t", "row n", "unit"),
                          "dh0": ("row n", "unit")})


def where(x, k=None):
    T, N, D = x.shape
    return f"T={T}, N={N}, D={D}" + (f", k={k}" if k is not None else "")


def check_backward(ctx, names, x, h0, W_xh, W_hh, b, k):
    """The learner's gradients ``names`` for one sequence, against central differences of
    the reference forward (run chunk by chunk when k < T)."""
    T = x.shape[0]
    hs = ctx.ref.rnn_forward(x, h0, W_xh, W_hh, b)
    dhs = upstream(ctx.rng, hs.shape)
    got = ctx.unpack(ctx.call(BWD, dhs, x, h0, hs, W_xh, W_hh, k), 5, BWD, ", ".join(GRADS))
    forms = traps.backward_forms(dhs, x, h0, hs, W_xh, W_hh, k)
    f = probes.chunked_forward(ctx.ref, T, k, hs)
    args = [x, h0, W_xh, W_hh, b]
    for name in names:
        i = GRADS.index(name)

        def one(value, i=i):
            changed = list(args)
            changed[i] = value
            return f(*changed)
        try:
            ctx.expect_gradient(name, got[i], one, args[i], dhs, BWD, traps=forms[name])
        except Fail as failure:
            head, _, details = failure.feedback.partition("\n")
            raise Fail(f"{head.rstrip('.')} (sequence {where(x, k)})." + (f"\n{details}" if details else ""),
                       failure.trap) from None
    return got


@QUESTION.check("forward: each step reads the previous hidden state", points=2, hints=(
    "Which hidden state does step 0 read, and which does step t read?",
    "One tanh per step, of the input's term, the recurrent term and the bias; keep every step's "
    "state.",
))
def forward_values(ctx):
    for T, N, D, H in ((6, 3, 4, 5), (1, 2, 3, 4)):
        x, h0, W_xh, W_hh, b = probes.sequence(ctx.rng, T, N, D, H)
        got = ctx.call(FWD, x, h0, W_xh, W_hh, b)
        ctx.expect_array("hs", got, ctx.ref.rnn_forward(x, h0, W_xh, W_hh, b), FWD)


@QUESTION.check("dW_xh, dW_hh and db (full BPTT, k = T)", points=3, hints=(
    "The same weights are used at every step: how many contributions does each gradient get?",
    "Add each step's share into the weight gradients; never assign them inside the loop.",
    "Walk the steps from the last to the first, so that each step knows what flows back from "
    "the step after it.",
))
def weight_gradients(ctx):
    x, h0, W_xh, W_hh, b = probes.sequence(ctx.rng, 6, 3, 4, 5)
    check_backward(ctx, ("dW_hh", "dW_xh", "db"), x, h0, W_xh, W_hh, b, 6)


@QUESTION.check("dx and dh0 (full BPTT, k = T)", points=2, hints=(
    "h_t feeds two things: this step's output and step t + 1. Where does the second part of "
    "its gradient come from?",
    "The carry from step t + 1 passes back through W_hh; what comes out of step 0 is dh0.",
))
def carried_gradients(ctx):
    x, h0, W_xh, W_hh, b = probes.sequence(ctx.rng, 5, 2, 3, 4)
    check_backward(ctx, ("dx", "dh0"), x, h0, W_xh, W_hh, b, 5)  # dx first: dh0 alone cannot tell a cut at t = 1 from no carry


@QUESTION.check("truncated BPTT (k = 3; T = 7 and T = 6)", points=3,
                kinks=("chunk-boundary",), hints=(
    "Write the chunks of k = 3 steps for T = 7 out by hand: which steps start one?",
    "Only the carry into the previous chunk is dropped; weight gradients still add every step, "
    "and the first chunk still passes its gradient to h0.",
))
def truncation(ctx):
    for T in (7, 6):
        x, h0, W_xh, W_hh, b = probes.sequence(ctx.rng, T, 2, 3, 4)
        check_backward(ctx, GRADS, x, h0, W_xh, W_hh, b, 3)


@QUESTION.check("truncation at its limits: k = 1, k = T and k > T", points=1, hints=(
    "With k = 1 every step is a chunk of its own; with k at least T there is one chunk.",
))
def truncation_limits(ctx):
    x, h0, W_xh, W_hh, b = probes.sequence(ctx.rng, 4, 2, 3, 3)
    hs = ctx.ref.rnn_forward(x, h0, W_xh, W_hh, b)
    for k in (1, 4, 6):
        dhs = upstream(ctx.rng, hs.shape)
        got = ctx.unpack(ctx.call(BWD, dhs, x, h0, hs, W_xh, W_hh, k), 5, BWD, ", ".join(GRADS))
        expected = ctx.ref.rnn_backward(dhs, x, h0, hs, W_xh, W_hh, k)
        forms = traps.backward_forms(dhs, x, h0, hs, W_xh, W_hh, k)
        for i, name in enumerate(GRADS):
            try:
                ctx.expect_array(name, got[i], expected[i], BWD, traps=forms[name])
            except Fail as failure:
                head, _, details = failure.feedback.partition("\n")
                raise Fail(f"With k = {k} on a sequence of T = 4: {head}" + (f"\n{details}" if details else ""),
                           failure.trap) from None


def check_clip(ctx, grads, max_norm):
    got = ctx.unpack(ctx.call(CLIP, grads, max_norm), 2, CLIP, "clipped, total_norm")
    clipped, total = got
    want, want_total = ctx.ref.clip_grad_norm(grads, max_norm)
    if not isinstance(clipped, (list, tuple)) or len(clipped) != len(grads):
        raise Fail(f"{CLIP} must return its clipped gradients as a list of {len(grads)} arrays")
    ctx.expect_array("total_norm", total, np.asarray(want_total), CLIP)
    forms = traps.clip_forms(grads, max_norm)
    for i, (g, w) in enumerate(zip(clipped, want)):
        ctx.expect_array(f"clipped[{i}]", g, w, CLIP, traps={"clip-per-tensor": forms[i]})


@QUESTION.check("clip_grad_norm: several tensors over max_norm", points=2, hints=(
    "How many norms do you compute: one per tensor, or one for all of them?",
    "Every tensor is scaled by the same factor, max_norm over the global norm, when that norm "
    "exceeds max_norm.",
))
def clipping(ctx):
    shapes = [(4, 3), (3, 3), (3,)]
    check_clip(ctx, probes.gradients_list(ctx.rng, shapes, 12.0), 5.0)
    check_clip(ctx, probes.gradients_list(ctx.rng, [(2, 5), (5,)], 3.0), 1.0)


@QUESTION.check("clipping at the threshold: a norm of exactly max_norm, or below, is unchanged",
                points=1, kinks=("clip-threshold",), hints=(
    "Compare the global norm with max_norm: which side of the comparison does equality fall on?",
    "Below or at the limit nothing changes; above it the scaled gradients have norm max_norm.",
))
def clipping_threshold(ctx):
    exact = [np.array([2.0, 3.0]), np.array([[6.0]])]  # global norm sqrt(4 + 9 + 36) = 7 exactly
    check_clip(ctx, exact, 7.0)
    check_clip(ctx, exact, 7.5)
    check_clip(ctx, exact, 6.5)  # and just above it, so that doing nothing cannot pass


@QUESTION.check("a long sequence (T = 40) whose gradients grow: full BPTT still matches", points=1,
                hints=(
    "Nothing changes with length: the same loop, the same carry, the same sums.",
))
def long_sequence(ctx):
    x, h0, W_xh, W_hh, b = probes.sequence(ctx.rng, 40, 2, 3, 6, radius=1.3)
    check_backward(ctx, ("dW_hh", "dh0"), 0.3 * x, h0, W_xh, W_hh, b, 40)


@QUESTION.check("inputs left unchanged (and the answers right)", points=1, hints=(
    "Does any function change x, hs, dhs, the weights or the gradients in place (+=, *=)?",
    "Build results in new arrays; scale copies of the gradients, not the gradients themselves.",
))
def inputs_unchanged(ctx):
    x, h0, W_xh, W_hh, b = probes.sequence(ctx.rng, 4, 2, 3, 3)
    hs = ctx.ref.rnn_forward(x, h0, W_xh, W_hh, b)
    dhs = upstream(ctx.rng, hs.shape)
    grads = probes.gradients_list(ctx.rng, [(3, 3), (3,)], 4.0)
    ctx.expect_inputs_unchanged([
        (FWD, (x, h0, W_xh, W_hh, b), ["x", "h0", "W_xh", "W_hh", "b"], hs),
        (BWD, (dhs, x, h0, hs, W_xh, W_hh, 2), ["dhs", "x", "h0", "hs", "W_xh", "W_hh"],
         ctx.ref.rnn_backward(dhs, x, h0, hs, W_xh, W_hh, 2)),
        (CLIP, (grads, 1.0), ["grads"], ctx.ref.clip_grad_norm(grads, 1.0)),
    ])
