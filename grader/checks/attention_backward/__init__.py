"""Hidden checks for attention_backward: attention's backward without the N x N matrix.

Shapes: q, k, v, o, do, dq, dk, dv (B, N, d); lse (B, N); B independent heads, N tokens, d
features; scores S = q k^T / sqrt(d), masked above the diagonal when causal. The backward is
called with the reference's own o and lse, so it is graded apart from the forward. The
reference is the solution notebook (``ctx.ref``), and so are the traps' wrong values (fed
o = 0 it has no rowsum term; fed q * sqrt(d) it forgot the scale when recomputing S; run
unmasked on a causal lse it leaks the future). Each trap is also recognised by behaviour on
inputs built for it: all values equal (dq, dk must vanish), a gradient on row 0 only (later
keys get none), a changed last token (earlier outputs must not move), scores of +-1e4.

The memory budget. Each function is called once per path (causal and not), memory measured,
at B = 1, N = 2048, d = 32: one (N, d) array is A = 0.5 MiB, one (N, N) float64 matrix 32 MiB.
The sandbox's peak for the call (see grader/sandbox/measure.py) must stay within

    budget = 4 A + 7 * (128 * N * 8 B) = 2 MiB + 14 MiB = 16 MiB

the outputs with one array to spare, and seven working tiles of 128 query rows against all N
keys, so a row-tiled answer fits as well as a FlashAttention-style one; P whole is twice the
budget, and building it the usual way (S, exp(S), P) six times. N = 2048, not 4096: the
four measured calls are the grading's cost (N squared work each); at 2048 the verdicts on
every answer in the corpus stay the same. Both checks take the same inputs
(``memory_inputs``), so the reference's o and lse at this size are made once. Measured in
the sandbox (cgroup meter) on the 2-core reference machine, peak of the forward and of the
backward, causal and not: the solution (128 x 128 tiles) 1.9 to 2.2 and 3.6 to 3.7 MiB;
tests/answers/attention_backward/row_blocks.py (128 x N tiles) 9.4 and 12.6 MiB;
torch_answer.py (PyTorch's fused CPU kernels) 2.8 to 3.0 and 6.3 to 6.6 MiB;
materialises_p.py 98 and 99 MiB, 6 times the budget; wrong_causal_mask_materialised.py 69
MiB on the causal path.
"""
from __future__ import annotations

import functools

import numpy as np

from backprop_traps.grader.checks.attention_backward.probes import (BWD, FWD, GRADS, MEM_N, call_backward,
                                                     call_forward, huge_scores, memory_inputs, non_finite, prefixed,
                                                     qkv, reference_forward, where)
from backprop_traps.grader.checks.attention_backward.traps import (EXPLANATION, TRAPS, expect_backward, expect_constant_values,
                                                    expect_forward, expect_memory, expect_no_future_gradient)
from backprop_traps.grader.engine.gradcheck import upstream
from backprop_traps.grader.engine.question import Fail, Question

QUESTION = Question("attention_backward", "Attention backward without storing the N x N matrix", traps=TRAPS,
                    difficulty="hard",
                    kinks={"causal-diagonal": "the causal mask's edge: query i sees key i, not key i + 1"},
                    memory_paths=("causal=False", "causal=True"),
                    axes={name: ("head b", "position i", "feature") for name in ("dq", "dk", "dv", "o")},
                    # the heads are independent: fewer heads are still a valid input
                    shrink={"attention_backward": {"B": [(i, 0) for i in range(6)]}})


@QUESTION.check("forward: output and log-sum-exp (causal and not; N = 1 and N across tiles)", points=2, hints=(
    "lse is the natural log of the sum of exp over each row's scaled, masked scores.",
    "Scale the scores by 1 / sqrt(d) exactly once; a causal query i sees keys 0..i only.",
    "The last tile of rows or keys may be shorter than the others.",
))
def forward_values(ctx):
    for B, N, d in ((2, 5, 4), (1, 1, 3), (2, 131, 9)):
        q, k, v = qkv(ctx.rng, B, N, d)
        for causal in (False, True):
            with prefixed(where(q, causal)):
                o, lse = call_forward(ctx, q, k, v, causal)
                expect_forward(ctx, o, lse, q, k, v, causal)


@QUESTION.check("forward: finite and right for scores around 1e4", points=1, hints=(
    "exp(710) is inf in float64, exp(-750) is 0: what keeps every exponent small?",
    "The same running max that makes exp safe gives lse = max + log(sum).",
))
def forward_stable(ctx):
    q, k, v = qkv(ctx.rng, 2, 40, 8)
    with prefixed(where(q, False, "moderate scores")):
        o, lse = call_forward(ctx, q, k, v, False)
        expect_forward(ctx, o, lse, q, k, v, False)
    q, k, v = huge_scores(ctx.rng, 2, 40, 8)
    for causal in (False, True):
        with prefixed(where(q, causal, "scores of +-1e3 to 1e4")):
            o, lse = call_forward(ctx, q, k, v, causal)
            if non_finite(o, lse):
                raise Fail(f"your o or lse holds inf or nan. {EXPLANATION['unstable-softmax']}",
                           "unstable-softmax")
            expect_forward(ctx, o, lse, q, k, v, causal)


@QUESTION.check("backward: finite differences, non-causal (and all values equal: dq = dk = 0)", points=2, hints=(
    "dv = P^T do and dP = do v^T; the softmax's backward is not just P * dP.",
    "When every row of v is the same vector, o cannot depend on q or k: what must dq and dk be?",
    "The scale 1/sqrt(d) meets dq and dk once each, as it met the scores once.",
))
def backward_gradcheck(ctx):
    q, k, _ = qkv(ctx.rng, 2, 7, 4)
    same = np.broadcast_to(ctx.rng.standard_normal((2, 1, 4)), (2, 7, 4)).copy()  # v_j = v_0 for all j
    cases = [(q, k, same), qkv(ctx.rng, 2, 6, 4), qkv(ctx.rng, 1, 1, 3)]
    for index, (q, k, v) in enumerate(cases):
        o, lse = ctx.ref.attention_forward(q, k, v, False)
        do = upstream(ctx.rng, q.shape)
        with prefixed(where(q, False, "every row of v the same" if index == 0 else "")):
            grads = call_backward(ctx, do, q, k, v, o, lse, False)
            if index == 0:
                expect_constant_values(ctx, grads, do, q, k, v, o, lse)
            expect_backward(ctx, grads, do, q, k, v, o, lse, False, gradcheck=True)


@QUESTION.check("backward: causal, finite differences; no gradient reaches later keys", points=2,
                kinks=("causal-diagonal",), hints=(
    "Apply the same causal mask when you recompute the scores in the backward.",
    "If only the first query has an upstream gradient, which keys and values can get any?",
))
def backward_causal(ctx):
    for first_row_only in (True, False):
        q, k, v = qkv(ctx.rng, 2, 7 if first_row_only else 6, 4)
        o, lse = ctx.ref.attention_forward(q, k, v, True)
        do = upstream(ctx.rng, q.shape)
        if first_row_only:  # only query 0, which sees key 0 alone, passes gradient back
            do[:, 1:] = 0.0
        with prefixed(where(q, True, "do is 0 after the first row" if first_row_only else "")):
            grads = call_backward(ctx, do, q, k, v, o, lse, True)
            if first_row_only:
                expect_no_future_gradient(ctx, grads, do, q, k, v, o, lse)
            expect_backward(ctx, grads, do, q, k, v, o, lse, True, gradcheck=True)


@QUESTION.check("backward: several tiles (N = 200, d = 16), causal and not", points=2, hints=(
    "The last tile of rows or keys may be shorter than the others.",
    "dq of one query gathers from every key tile; dk and dv of one key from every query tile.",
))
def backward_tiles(ctx):
    for causal in (False, True):
        q, k, v = qkv(ctx.rng, 2, 200, 16)
        o, lse = ctx.ref.attention_forward(q, k, v, causal)
        do = upstream(ctx.rng, q.shape)
        with prefixed(where(q, causal)):
            grads = call_backward(ctx, do, q, k, v, o, lse, causal)
            expect_backward(ctx, grads, do, q, k, v, o, lse, causal, gradcheck=True, reference_too=True)


@QUESTION.check("backward: finite and right for scores around 1e4", points=1, hints=(
    "exp(S) alone overflows; exp(S - lse) never does, because lse is at least the row's max.",
))
def backward_stable(ctx):
    q, k, v = qkv(ctx.rng, 2, 30, 8)
    o, lse = ctx.ref.attention_forward(q, k, v, False)
    do = upstream(ctx.rng, q.shape)
    with prefixed(where(q, False, "moderate scores")):
        grads = call_backward(ctx, do, q, k, v, o, lse, False)
        expect_backward(ctx, grads, do, q, k, v, o, lse, False, gradcheck=False)
    q, k, v = huge_scores(ctx.rng, 2, 30, 8)
    for causal in (False, True):
        o, lse = ctx.ref.attention_forward(q, k, v, causal)
        do = upstream(ctx.rng, q.shape)
        with prefixed(where(q, causal, "scores of +-1e3 to 1e4")):
            grads = call_backward(ctx, do, q, k, v, o, lse, causal)
            if non_finite(*grads):
                raise Fail(f"your gradients hold inf or nan. {EXPLANATION['unstable-softmax']}",
                           "unstable-softmax")
            expect_backward(ctx, grads, do, q, k, v, o, lse, causal, gradcheck=False)


@QUESTION.check(f"forward: peak memory within budget (N = {MEM_N}, no N x N matrix; causal and not)", points=2,
                memory=("causal=False", "causal=True"), hints=(
    "The softmax of a row needs its max and its sum, and both can be updated one tile of keys at a time.",
    f"Keep o, lse and per-row running values; every (N, N) array is {MEM_N * MEM_N * 8 // 2**20} MiB at this size.",
))
def forward_memory(ctx):
    q, k, v, _ = memory_inputs(ctx.seed)
    for causal in (False, True):  # the promise holds on both paths: a causal mask is N x N too
        reference = functools.partial(reference_forward, ctx.ref.attention_forward, ctx.seed, causal)
        expect_memory(ctx, FWD, (q, k, v, causal), ("o", "lse"), lambda *_, made=reference: made(), q, causal)


@QUESTION.check(f"backward: peak memory within budget (N = {MEM_N}; causal and not)",
                points=3, memory=("causal=False", "causal=True"), hints=(
    "P_ij = exp(S_ij - lse_i) holds exactly for any single tile: no tile needs any other.",
    "The only whole-row quantity the backward needs is one number per row, and it comes from do and o.",
    "Accumulate dk and dv for a tile of keys over every tile of queries, and dq likewise.",
))
def backward_memory(ctx):
    q, k, v, do = memory_inputs(ctx.seed)  # the forward's check made their o and lse (else: made here)
    forwards = [ctx.meanwhile(reference_forward, ctx.ref.attention_forward, ctx.seed, causal)
                for causal in (False, True)]
    for causal, forward in zip((False, True), forwards):
        o, lse = forward()
        expect_memory(ctx, BWD, (do, q, k, v, o, lse, causal), GRADS, ctx.ref.attention_backward, q, causal)


@QUESTION.check("forward and backward: right answers, inputs left unchanged", points=1, hints=(
    "Does either function write into q, k, v, o, lse or do (+=, -=, [...] =, out=)?",
    "Slices of an input are views: writing into a tile writes into the input. Build new arrays.",
))
def inputs_unchanged(ctx):
    q, k, v = qkv(ctx.rng, 2, 9, 4)
    for causal in (False, True):
        with prefixed(where(q, causal)):
            (o, lse), result = call_forward(ctx, q, k, v, causal, echo_args=True)
            expect_forward(ctx, o, lse, q, k, v, causal)
        ctx.expect_unchanged(FWD, result, [q, k, v], ["q", "k", "v"])
        ref_o, ref_lse = ctx.ref.attention_forward(q, k, v, causal)
        do = upstream(ctx.rng, q.shape)
        with prefixed(where(q, causal)):
            grads, result = call_backward(ctx, do, q, k, v, ref_o, ref_lse, causal, echo_args=True)
            expect_backward(ctx, grads, do, q, k, v, ref_o, ref_lse, causal, gradcheck=False)
        ctx.expect_unchanged(BWD, result, [do, q, k, v, ref_o, ref_lse], ["do", "q", "k", "v", "o", "lse"])
