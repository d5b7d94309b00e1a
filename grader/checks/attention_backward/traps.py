"""attention_backward's traps: the known-wrong variants (all from the reference: fed o = 0 it
has no rowsum term; fed q * sqrt(d) it forgot the scale when recomputing S; run unmasked on a
causal lse it leaks the future), the behavioural probes that name them, and the memory verdict."""
from __future__ import annotations

import math

import numpy as np

from backprop_traps.grader.checks.attention_backward.probes import (BWD, FWD, GRADS, MEM_B, MEM_D, MEM_N, TILE_ROWS, MiB,
                                                     call_forward, prefixed, where)
from backprop_traps.grader.engine.gradcheck import Rows
from backprop_traps.grader.engine.memory_verdict import peak_of
from backprop_traps.grader.engine.question import Fail, Trap

TRAPS = [
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
]
EXPLANATION = {t.id: t.explanation for t in TRAPS}


# -- the known-wrong variants -------------------------------------------------------------
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


# -- judging values ----------------------------------------------------------------------
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
                       f"outputs at earlier positions. {EXPLANATION['causal-leak']}",
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


def expect_backward(ctx, grads, do, q, k, v, o, lse, causal, gradcheck: bool, reference_too: bool = False) -> None:
    """dq, dk, dv: central differences of the reference forward (``gradcheck``), or its
    backward; with ``reference_too``, each gradient against both, the backward first."""
    wrong = backward_variants(ctx, do, q, k, v, o, lse, causal)
    expected = ctx.ref.attention_backward(do, q, k, v, o, lse, causal)
    inputs = {"dq": q, "dk": k, "dv": v}
    for name, got, want in zip(GRADS, grads, expected):
        if not gradcheck or reference_too:
            ctx.expect_array(name, got, want, BWD, traps=wrong[name])
        if not gradcheck:
            continue

        # heads are independent: finite differences stack perturbed heads (Rows)
        f = {"dq": Rows(lambda x, k, v: ctx.ref.attention_forward(x, k, v, causal)[0], k, v),
             "dk": Rows(lambda x, q, v: ctx.ref.attention_forward(q, x, v, causal)[0], q, v),
             "dv": Rows(lambda x, q, k: ctx.ref.attention_forward(q, k, x, causal)[0], q, k)}[name]
        ctx.expect_gradient(name, got, f, inputs[name], do, BWD, traps=wrong[name], rows=True)


def expect_constant_values(ctx, grads, do, q, k, v, o, lse) -> None:
    """All value rows equal: o is that row whatever q and k are, so dq and dk must be 0. A
    backward whose dv is right but whose dq or dk is not 0 here lacks the row term D, which
    is exactly what cancels dP_ij = do_i . v_j against D_i = do_i . o_i."""
    dq, dk, dv = (ctx.as_array(name, g, q, BWD) for name, g in zip(GRADS, grads))
    without_row_term = _without_row_term(do, q, k, v)
    for name, got in (("dq", dq), ("dk", dk)):
        if ctx.close(got, 0.0):
            continue
        dv_right = ctx.close(dv, ctx.ref.attention_backward(do, q, k, v, o, lse, False)[2])
        named = dv_right and ctx.close(got, without_row_term[name])  # that form exactly, nothing else
        why = EXPLANATION["missing-rowsum"] if named else "Which term of dS should cancel dP here?"
        raise Fail(f"every row of v is the same vector, so o is that vector whatever q and k are and "
                   f"`{name}` must be 0, but yours has entries up to {np.max(np.abs(got)):.3g}. {why}",
                   "missing-rowsum" if named else None)


def _without_row_term(do, q, k, v) -> dict:
    """dq and dk of a non-causal backward whose dS lacks the row term: dS = P * dP."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = q @ np.swapaxes(k, -1, -2) * scale                    # B, N, N
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    ds = p * (do @ np.swapaxes(v, -1, -2))                    # B, N, N
    return {"dq": ds @ k * scale, "dk": np.swapaxes(ds, -1, -2) @ q * scale}


def expect_no_future_gradient(ctx, grads, do, q, k, v, o, lse) -> None:
    """Only query 0 has a gradient and it sees key 0 alone: keys 1.. get nothing. A backward that
    drops the mask gives each later key j exactly what the unmasked backward gives (dv_j =
    exp(S_0j - lse_0) do_0): the leak is named only when that formula explains the later keys'
    dv and dk. A dv that is merely a multiple of do_0 (P dO for P^T dO does that too) is not."""
    dk, dv = (ctx.as_array(name, g, do, BWD) for name, g in (("dk", grads[1]), ("dv", grads[2])))
    if ctx.close(dk[:, 1:], 0.0) and ctx.close(dv[:, 1:], 0.0):
        return
    with np.errstate(all="ignore"):
        _, leak_dk, leak_dv = ctx.ref.attention_backward(do, q, k, v, o, lse, False)
    if ctx.close(dv[:, 1:], leak_dv[:, 1:]) and ctx.close(dk[:, 1:], leak_dk[:, 1:]):
        raise Fail("`dk` and `dv` of the keys after key 0 are exactly what a backward without the "
                   "mask gives, although query 0 may only see key 0: your backward gives later keys a "
                   f"probability. {EXPLANATION['causal-leak']}", "causal-leak")
    raise Fail("only query 0 has an upstream gradient, and it sees key 0 alone, so `dk` and `dv` must "
               "be 0 for keys 1 to 6; yours are not.")


# -- memory ------------------------------------------------------------------------------
def memory_budget(B, N, d) -> int:
    """Bytes allowed for one call: 4 arrays (B, N, d) and 7 tiles of 128 rows by N keys."""
    return 4 * B * N * d * 8 + 7 * B * TILE_ROWS * N * 8


def judge_memory(ctx, result, fn: str, causal: bool = False) -> None:
    peak = peak_of(result)
    budget, matrix = memory_budget(MEM_B, MEM_N, MEM_D), MEM_B * MEM_N * MEM_N * 8
    if peak <= budget:
        return
    over = (f"With B={MEM_B}, N={MEM_N}, d={MEM_D}, causal={causal}: {fn} peaked at {peak / MiB:.1f} MiB, over the "
            f"budget of {budget / MiB:.0f} MiB (its outputs plus a few tiles of {TILE_ROWS} rows); one "
            f"N x N float64 matrix is {matrix / MiB:.0f} MiB.")
    if peak >= 0.45 * matrix:  # about a whole (N, N) matrix or more, float32 included
        mask = (" The causal path is measured after the other passed: an N x N mask counts as much as "
                "P (mask each tile by comparing its row and column indices instead).") if causal else ""
        raise Fail(f"{over} {EXPLANATION['materialises-p']}{mask}", "materialises-p")
    raise Fail(f"{over} That is less than an N x N matrix but more than tiles need: use tiles of at "
               f"most {TILE_ROWS} query rows (or keys), and let go of each tile's arrays before the next.")


def expect_memory(ctx, fn, args, names, reference, q, causal: bool = False) -> None:
    """The learner's ``fn(*args)`` with memory measured (the reference computed meanwhile on
    the other core): right values first, then the peak against the budget."""
    expected = ctx.meanwhile(reference, *args)
    result = ctx.call(fn, *args, measure_memory=True)
    got = ctx.unpack(result.value, len(names), fn, ", ".join(names))
    expected = expected()
    try:
        with prefixed(where(q, causal)):
            for name, value, want in zip(names, got, expected):
                ctx.expect_array(name, value, want, fn)
    except Fail as fail:
        raise Fail(fail.feedback + " Memory is judged once the values are right.") from None
    judge_memory(ctx, result, fn, causal)
