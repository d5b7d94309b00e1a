"""Hidden checks for attention_backward: attention's backward without the N x N matrix.

Shapes: q, k, v, o, do, dq, dk, dv (B, N, d); lse (B, N); B independent heads, N tokens, d
features; scores S = q k^T / sqrt(d), masked above the diagonal when causal. The backward is
called with the reference's own o and lse, so it is graded apart from the forward. The
reference is the solution notebook (``ctx.ref``), and so are the traps' wrong values (fed
o = 0 it has no rowsum term; fed q * sqrt(d) it forgot the scale when recomputing S; run
unmasked on a causal lse it leaks the future). Each trap is also recognised by behaviour on
inputs built for it: all values equal (dq, dk must vanish), a gradient on row 0 only (later
keys get none), a changed last token (earlier outputs must not move), scores of +-1e4.

The memory budget. Each function is called once, memory measured, at B = 1, N = 4096,
d = 32, not causal: one (N, d) array is A = 1 MiB, one (N, N) float64 matrix 128 MiB. The
sandbox's peak for the call (see grader/sandbox/measure.py) must stay within

    budget = 4 A + 7 * (128 * N * 8 B) = 4 MiB + 28 MiB = 32 MiB

the outputs with one array to spare, and seven working tiles of 128 query rows against all N
keys, so a row-tiled answer fits as well as a FlashAttention-style one; P whole is 4 times
the budget. Measured in the sandbox (cgroup meter) on the 2-core reference machine under
load, 3 grades each: the solution (128 x 128 tiles) peaks at 3.2 MiB in the forward (0.19 to
0.41 s) and 5.2 to 5.5 MiB in the backward (0.71 to 2.7 s); tests/answers/attention_backward/
row_blocks.py (128 x N tiles) at 17.4 and 23.4 to 23.7 MiB; torch_answer.py (PyTorch's
fused CPU kernels) at 3.6 and 8.3 MiB; materialises_p.py at 387 and 389 MiB, 12 times the
budget.
"""
from __future__ import annotations

import contextlib
import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from grader.engine.gradcheck import upstream
from grader.engine.question import Fail, Question, Trap

FWD, BWD = "attention_forward", "attention_backward"
GRADS = ("dq", "dk", "dv")
MEM_B, MEM_N, MEM_D, TILE_ROWS = 1, 4096, 32, 128
MiB = 1024 * 1024

QUESTION = Question("attention_backward", "Attention backward without storing the N x N matrix", traps=[
    Trap("materialises-p", "Your values are right, but your function builds the whole N x N matrix of "
         "scores or probabilities (or dP, dS) at once, so its memory grows like N squared. Walk over "
         "tiles: in the forward keep a running max, sum and output per row (online softmax) and save "
         "only o and lse; in the backward recompute each tile's probabilities as exp(S - lse) and "
         "accumulate dq, dk, dv tile by tile."),
    Trap("missing-rowsum", "Your dq and dk miss the softmax's row term. Every row of P sums to 1, so "
         "dS = P * (dP - D) with D_i = sum_j P_ij dP_ij, which equals the row sum of dO * O: compute "
         "it once from do and o before the tiles (it needs no P), and subtract it inside each tile."),
    Trap("scale-wrong", "Your 1/sqrt(d) is in the wrong places: applied twice, or forgotten. The scores "
         "are q k^T / sqrt(d) (scaled once, in the forward and again when the backward recomputes "
         "them), and by the chain rule dq = dS k / sqrt(d) and dk = dS^T q / sqrt(d); dv gets no scale."),
    Trap("causal-leak", "Your causal mask lets a query see later keys. In the backward, recompute the "
         "scores with the same mask as the forward (exp(S - lse) of an unmasked future score is not "
         "0), or skip the tiles that lie wholly after the query rows; in the forward, honour `causal`."),
    Trap("unstable-softmax", "Your softmax overflows or underflows for scores around 1e4 and gives inf "
         "or nan. Subtract each row's (running) max before exp, take lse as max + log(sum of "
         "exp(s - max)), and in the backward use exp(S - lse), whose exponents are never positive."),
], difficulty="hard")


# -- input generators ------------------------------------------------------------------
def qkv(rng, B, N, d):
    """q, k, v with scores of order 1 (softmaxes neither flat nor one-hot)."""
    return tuple(rng.standard_normal((B, N, d)) for _ in range(3))


def huge_scores(rng, B, N, d):
    """q, k, v whose scores are c_i + r_ij: c_i = +-1e3..1e4 per query row (exp overflows or
    underflows without a max shift), r_ij of order 1 (the softmax is far from one-hot)."""
    q, k, v = qkv(rng, B, N, d)
    k[:, :, 0] = 1.0
    q[:, :, 0] = rng.choice([-1.0, 1.0], size=(B, N)) * rng.uniform(1e3, 1e4, size=(B, N)) * math.sqrt(d)
    return q, k, v


def where(q, causal, note: str = "") -> str:
    B, N, d = q.shape
    return f"With B={B}, N={N}, d={d}, causal={causal}{', ' + note if note else ''}: "


@contextlib.contextmanager
def prefixed(text: str):
    """Put ``text`` (the shapes) in front of any failure's feedback."""
    try:
        yield
    except Fail as fail:
        raise Fail(text + fail.feedback, fail.trap) from None


# -- the reference and the known-wrong variants (traps) ------------------------------------
def forward_variants(ctx, q, k, v, causal) -> dict:
    """{trap: [(o, lse), ...]}: the scale missed or doubled; the mask ignored."""
    r = math.sqrt(q.shape[2])
    with np.errstate(all="ignore"):  # a wrong variant may overflow; it then matches nothing
        wrong = {"scale-wrong": [ctx.ref.attention_forward(q * r, k, v, causal),
                                 ctx.ref.attention_forward(q / r, k, v, causal)]}
        if causal:
            wrong["causal-leak"] = [ctx.ref.attention_forward(q, k, v, False)]
    return wrong


def backward_variants(ctx, do, q, k, v, o, lse, causal) -> dict:
    """{gradient name: {trap: [wrong values]}}, all from the reference's backward."""
    r = math.sqrt(q.shape[2])
    with np.errstate(all="ignore"):  # a wrong variant may overflow (huge scores); it then matches nothing
        dq, dk, _ = ctx.ref.attention_backward(do, q, k, v, o, lse, causal)
        nq, nk, _ = ctx.ref.attention_backward(do, q, k, v, np.zeros_like(o), lse, causal)  # D = 0
        fq, fk, fv = ctx.ref.attention_backward(do, q * r, k, v, o, lse, causal)  # S recomputed unscaled
        leak = ctx.ref.attention_backward(do, q, k, v, o, lse, False) if causal else None
    wrong = {"dq": {"missing-rowsum": [nq], "scale-wrong": [dq * r, dq / r, fq, fq * r]},
             "dk": {"missing-rowsum": [nk], "scale-wrong": [dk * r, dk / r, fk / r, fk]},
             "dv": {"scale-wrong": [fv]}}
    if causal:  # the mask left out of the backward: exp(S - lse) for every pair
        for name, g in zip(GRADS, leak):
            wrong[name]["causal-leak"] = [g]
    return wrong


# -- calling the learner -------------------------------------------------------------------
def call_forward(ctx, *args, **how):
    """``(o, lse)`` from the learner's forward; with ``how`` (echo_args, measure_memory), also
    the call's result."""
    result = ctx.call(FWD, *args, **how)
    value = ctx.unpack(result.value if how else result, 2, FWD, "o, lse")
    return (value, result) if how else value


def call_backward(ctx, *args, **how):
    """``(dq, dk, dv)`` from the learner's backward, as ``call_forward``."""
    result = ctx.call(BWD, *args, **how)
    value = ctx.unpack(result.value if how else result, 3, BWD, "dq, dk, dv")
    return (value, result) if how else value


def non_finite(*arrays) -> bool:
    return any(isinstance(a, np.ndarray) and a.dtype.kind == "f" and not np.all(np.isfinite(a))
               for a in arrays)


def expect_forward(ctx, o, lse, q, k, v, causal) -> None:
    """o and lse must be the reference's; else name a trap (a variant, or the future moving o)."""
    ref_o, ref_lse = ctx.ref.attention_forward(q, k, v, causal)
    variants = forward_variants(ctx, q, k, v, causal)
    traps_o = {t: [w[0] for w in ws] for t, ws in variants.items()}
    traps_lse = {t: [w[1] for w in ws] for t, ws in variants.items()}
    try:
        ctx.expect_array("o", o, ref_o, FWD, traps=traps_o)
        ctx.expect_array("lse", lse, ref_lse, FWD, traps=traps_lse)
    except Fail as fail:
        if fail.trap is None and causal and q.shape[1] > 1 and future_moves_output(ctx, q, k, v):
            raise Fail(f"{fail.feedback} Changing only the last token's key and value changed your "
                       f"outputs at earlier positions. {QUESTION.trap('causal-leak').explanation}",
                       "causal-leak") from None
        raise


def future_moves_output(ctx, q, k, v) -> bool:
    """Does the learner's causal forward at rows < N - 1 change when only token N - 1 changes
    (while the same input gives the same output)?"""
    k2, v2 = k.copy(), v.copy()
    k2[:, -1] += 3.0
    v2[:, -1] -= 5.0
    try:
        a, again, b = (np.asarray(call_forward(ctx, q, kk, vv, True)[0], dtype=np.float64)
                       for kk, vv in ((k, v), (k, v), (k2, v2)))
    except (Fail, TypeError, ValueError):
        return False
    if not a.shape == again.shape == b.shape == q.shape or not np.allclose(a, again):
        return False
    return not np.allclose(a[:, :-1], b[:, :-1])


def expect_backward(ctx, grads, do, q, k, v, o, lse, causal, gradcheck: bool) -> None:
    """dq, dk, dv: central differences of the reference forward (``gradcheck``) or its backward."""
    wrong = backward_variants(ctx, do, q, k, v, o, lse, causal)
    expected = ctx.ref.attention_backward(do, q, k, v, o, lse, causal)
    inputs = {"dq": q, "dk": k, "dv": v}
    for name, got, want in zip(GRADS, grads, expected):
        if not gradcheck:
            ctx.expect_array(name, got, want, BWD, traps=wrong[name])
            continue

        def f(x, name=name):
            args = {"dq": (x, k, v), "dk": (q, x, v), "dv": (q, k, x)}[name]
            return ctx.ref.attention_forward(*args, causal)[0]
        ctx.expect_gradient(name, got, f, inputs[name], do, BWD, traps=wrong[name])


# -- checks ------------------------------------------------------------------------------
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
                raise Fail(f"your o or lse holds inf or nan. {QUESTION.trap('unstable-softmax').explanation}",
                           "unstable-softmax")
            expect_forward(ctx, o, lse, q, k, v, causal)


@QUESTION.check("backward: finite differences, not causal (with all values equal, dq = dk = 0)", points=2, hints=(
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


def expect_constant_values(ctx, grads, do, q, k, v, o, lse) -> None:
    """All value rows equal: o is that row whatever q and k are, so dq and dk must be 0. A
    backward whose dv is right but whose dq or dk is not 0 here lacks the row term D, which
    is exactly what cancels dP_ij = do_i . v_j against D_i = do_i . o_i."""
    dq, dk, dv = (ctx.as_array(name, g, q, BWD) for name, g in zip(GRADS, grads))
    for name, got in (("dq", dq), ("dk", dk)):
        if ctx.close(got, 0.0):
            continue
        dv_right = ctx.close(dv, ctx.ref.attention_backward(do, q, k, v, o, lse, False)[2])
        why = QUESTION.trap("missing-rowsum").explanation if dv_right else (
            "Which term of dS should cancel dP here?")
        raise Fail(f"every row of v is the same vector, so o is that vector whatever q and k are and "
                   f"`{name}` must be 0, but yours has entries up to {np.max(np.abs(got)):.3g}. {why}",
                   "missing-rowsum" if dv_right else None)


@QUESTION.check("backward: causal, finite differences; no gradient reaches later keys", points=2, hints=(
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
                expect_no_future_gradient(ctx, grads, do)
            expect_backward(ctx, grads, do, q, k, v, o, lse, True, gradcheck=True)


def expect_no_future_gradient(ctx, grads, do) -> None:
    """Only query 0 has a gradient and it sees key 0 alone: keys 1.. get nothing. A backward that
    drops the mask gives each later key j the weight exp(S_0j - lse_0), so its dv_j is a multiple
    of do_0: that is how the leak is told apart from other mistakes."""
    dk, dv = (ctx.as_array(name, g, do, BWD) for name, g in (("dk", grads[1]), ("dv", grads[2])))
    if ctx.close(dk[:, 1:], 0.0) and ctx.close(dv[:, 1:], 0.0):
        return
    do0 = do[:, 0]                                                    # B, d
    weights = np.einsum("bjd,bd->bj", dv[:, 1:], do0) / np.sum(do0 * do0, axis=1)[:, None]
    parallel = ctx.close(dv[:, 1:], weights[:, :, None] * do0[:, None, :])
    if parallel and not ctx.close(weights, 0.0):
        raise Fail("`dv` of the keys after key 0 is a multiple of query 0's upstream gradient, "
                   "although query 0 may only see key 0: your backward gives later keys a "
                   f"probability. {QUESTION.trap('causal-leak').explanation}", "causal-leak")
    raise Fail("only query 0 has an upstream gradient, and it sees key 0 alone, so `dk` and `dv` must "
               "be 0 for keys 1 to 6; yours are not.")


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
            expect_backward(ctx, grads, do, q, k, v, o, lse, causal, gradcheck=False)
            expect_backward(ctx, grads, do, q, k, v, o, lse, causal, gradcheck=True)


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
                raise Fail(f"your gradients hold inf or nan. {QUESTION.trap('unstable-softmax').explanation}",
                           "unstable-softmax")
            expect_backward(ctx, grads, do, q, k, v, o, lse, causal, gradcheck=False)


# -- memory ------------------------------------------------------------------------------
def memory_budget(B, N, d) -> int:
    """Bytes allowed for one call: 4 arrays (B, N, d) and 7 tiles of 128 rows by N keys."""
    return 4 * B * N * d * 8 + 7 * B * TILE_ROWS * N * 8


def judge_memory(ctx, result, fn: str) -> None:
    peak = (result.memory or {}).get("peak")
    if peak is None:
        why = (result.memory or {}).get("unavailable", "no memory measurement came back")
        raise Fail(f"Peak memory cannot be measured on this machine ({why}), so this check cannot "
                   "pass here; grade on Linux to get its points.")
    budget, matrix = memory_budget(MEM_B, MEM_N, MEM_D), MEM_B * MEM_N * MEM_N * 8
    if peak <= budget:
        return
    over = (f"With B={MEM_B}, N={MEM_N}, d={MEM_D}: {fn} peaked at {peak / MiB:.1f} MiB, over the "
            f"budget of {budget / MiB:.0f} MiB (its outputs plus a few tiles of {TILE_ROWS} rows); one "
            f"N x N float64 matrix is {matrix / MiB:.0f} MiB.")
    if peak >= 0.45 * matrix:  # about a whole (N, N) matrix or more, float32 included
        raise Fail(f"{over} {QUESTION.trap('materialises-p').explanation}", "materialises-p")
    raise Fail(f"{over} That is less than an N x N matrix but more than tiles need: use tiles of at "
               f"most {TILE_ROWS} query rows (or keys), and let go of each tile's arrays before the next.")


def expect_memory(ctx, fn, args, names, reference, q) -> None:
    """The learner's ``fn(*args)`` with memory measured (the reference computed meanwhile on
    the other core): right values first, then the peak against the budget."""
    with ThreadPoolExecutor(1) as pool:
        expected = pool.submit(reference, *args)
        result = ctx.call(fn, *args, measure_memory=True)
        got = ctx.unpack(result.value, len(names), fn, ", ".join(names))
        expected = expected.result()
    try:
        with prefixed(where(q, False)):
            for name, value, want in zip(names, got, expected):
                ctx.expect_array(name, value, want, fn)
    except Fail as fail:
        raise Fail(fail.feedback + " Memory is judged once the values are right.") from None
    judge_memory(ctx, result, fn)


@QUESTION.check(f"forward: peak memory within budget (N = {MEM_N}, no N x N matrix)", points=2, hints=(
    "The softmax of a row needs its max and its sum, and both can be updated one tile of keys at a time.",
    "Keep o, lse and per-row running values; every (N, N) array is 128 MiB at this size.",
))
def forward_memory(ctx):
    q, k, v = qkv(ctx.rng, MEM_B, MEM_N, MEM_D)
    expect_memory(ctx, FWD, (q, k, v, False), ("o", "lse"), ctx.ref.attention_forward, q)


@QUESTION.check(f"backward: peak memory within budget (N = {MEM_N}, P recomputed tile by tile)", points=3, hints=(
    "P_ij = exp(S_ij - lse_i) holds exactly for any single tile: no tile needs any other.",
    "The only whole-row quantity the backward needs is one number per row, and it comes from do and o.",
    "Accumulate dk and dv for a tile of keys over every tile of queries, and dq likewise.",
))
def backward_memory(ctx):
    q, k, v = qkv(ctx.rng, MEM_B, MEM_N, MEM_D)
    o, lse = ctx.ref.attention_forward(q, k, v, False)
    args = (upstream(ctx.rng, q.shape), q, k, v, o, lse, False)
    expect_memory(ctx, BWD, args, GRADS, ctx.ref.attention_backward, q)


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
