"""grad_accumulation's traps, and how an answer of accumulated_grads is judged and diagnosed
(used by the checks in ``__init__.py``).

An answer is compared with the reference's ``mlp_grads`` on the whole batch first, tightly: its
error may be at most TOL times the sum of the micro-batches' absolute contributions (float64
rounding is about 1e-15 of it, a float32 buffer's about 1e-8). Only a wrong answer is diagnosed,
by behaviour, in this order: a float32 or float16 result; a second identical call that answers differently,
by exactly one more gradient (a buffer kept between calls); equality with a known wrong
combination of the micro-batches' mean gradients, computed from the reference; an answer that
ignores a change to the first micro-batch but follows one to the last (the buffer zeroed inside
the loop); other weights w_k that explain it as sum_k w_k g_k (shown beside n_k / N: a dropped or
repeated micro-batch, never mistaken for rounding); an error at float32's rounding level (told,
not named: float32 accumulation is common practice), or at half precision's with every entry a
float16 or bfloat16 number (``half-precision-accumulator``).
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.question import Fail, Trap

ACC, GRADS = "accumulated_grads", ("dW1", "db1", "dW2", "db2")
TOL = 1e-10            # allowed error, relative to the sum of |micro-batch contributions|
FLOAT32_BAND = 1e-5    # errors between TOL and this are float32 rounding, not a wrong formula
HALF_BAND = 5e-2       # ... and between FLOAT32_BAND and this, float16 or bfloat16 rounding

TRAPS = [
    Trap("mean-of-means", "You averaged the micro-batches' mean gradients with equal weights (each "
         "micro-batch's mean loss divided by the number of micro-batches). That is the full batch's "
         "gradient only when every micro-batch has the same number of rows; with a shorter last one, "
         "its rows count for more than the others. Weight each micro-batch's mean gradient by its "
         "share of the rows, n_k / N."),
    Trap("sum-of-means", "You added the micro-batches' mean gradients without scaling them: with K "
         "equal micro-batches that is K times the full batch's gradient (in PyTorch: backward on "
         "each micro-batch's mean loss, never divided). Weight each micro-batch's mean gradient by "
         "n_k / N before adding it."),
    Trap("divide-by-steps", "You divided the micro-batches' summed gradients by the number of "
         "micro-batches K instead of the number of rows N: with equal micro-batches that is "
         "micro_batch times the full batch's gradient. The loss is a mean over the N rows: divide "
         "each micro-batch's summed gradient by N (or weight its mean gradient by n_k / N)."),
    Trap("zeroed-in-loop", "Only the last micro-batch reaches your answer: the buffer is zeroed (or "
         "reassigned) inside the loop, so every micro-batch overwrites the ones before it. Zero the "
         "buffers once, before the first micro-batch, and add each micro-batch's weighted gradient "
         "into them in place."),
    # `float32-accumulator` is retired (issue 22, E4): float32 accumulation is standard practice, so
    # it is told as "float32 where the contract wants float64" and named no trap; the id keeps its
    # old meaning and is never given to another mistake.
    Trap("half-precision-accumulator", "You accumulate the gradient in float16 or bfloat16. Each "
         "addition rounds the partial sum to 11 (float16) or 8 (bfloat16) bits, so the sum of many "
         "micro-batches drifts by about a thousandth of its size, and float16 overflows past 65504. "
         "Mixed-precision training keeps its accumulation buffers in float32 or wider; the contract "
         "asks for float64."),
    Trap("relu-mask-at-zero", "Your ReLU passes the gradient where z is exactly 0: the mask is "
         "taken as z >= 0. The ReLU's derivative at 0 is taken as 0 (as PyTorch does), so the mask is "
         "z > 0, the same comparison the forward's max(z, 0) makes."),
    Trap("stale-buffer", "Your function keeps its buffer between calls (a global, a default "
         "argument, an attribute) and does not zero it at the start of each call, so every call "
         "adds its gradient to what the previous call left. Create (or zero) the buffers inside the "
         "function, once per call, before the first micro-batch."),
    Trap("full-batch-at-once", "The numbers are right, but your peak memory grows with the whole "
         "batch: the model runs on all N rows at once (or every micro-batch's activations or "
         "gradients are kept). Accumulation exists to avoid that: run the forward and backward on "
         "one micro-batch at a time, as slices of x and y, add its gradient into the buffers, and "
         "let its arrays go before the next one."),
    Trap("noise-not-divided-by-batch", "You gave the noise of one drawn row, sigma^2, for the "
         "minibatch's: the minibatch's gradient is the mean of B independent draws, and a mean of "
         "B independent draws has 1/B of one draw's variance."),
    Trap("noise-divided-twice", "You divided one row's variance by B twice (sigma^2 / B^2): the "
         "mean's 1/B is squared once, on B draws whose variances add, so B sigma^2 / B^2."),
    Trap("bessel-corrected", "You took the rows' variance with N - 1 in the denominator (Bessel's "
         "correction, torch.var's default). Here every one of the N rows is a possible draw, each "
         "with probability 1/N: the variance of one draw is the rows' population variance, over N."),
]
EXPLAIN = {t.id: t.explanation for t in TRAPS}


def bounds(n, m):
    return [(a, min(a + m, n)) for a in range(0, n, m)]


def where(x, m) -> str:
    sizes = [b - a for a, b in bounds(len(x), m)]
    split = (f"one micro-batch of {sizes[0]} rows" if len(sizes) == 1 else
             f"{len(sizes)} micro-batches of {sizes[0]} row{'s' * (sizes[0] > 1)}" if len(set(sizes)) == 1 else
             f"{len(sizes)} micro-batches: {len(sizes) - 1} of {sizes[0]} rows and a last one of {sizes[-1]}")
    return f"N={len(x)}, micro_batch={m} ({split})"


# -- the reference's pieces and the known-wrong combinations -------------------------------
def means(ctx, params, x, y, m):
    """Each micro-batch's own mean gradient g_k (the reference's mlp_grads), and its n_k."""
    return [(b - a, ctx.ref.mlp_grads(params, x[a:b], y[a:b])) for a, b in bounds(len(x), m)]


def combine(parts, weights):
    return tuple(sum(w * g[i] for w, (_, g) in zip(weights, parts)) for i in range(4))


def wrong_answers(parts, n) -> dict[str, list[tuple]]:
    """The traps' answers: the micro-batches' mean gradients combined with the wrong weights."""
    k, sizes = len(parts), [s for s, _ in parts]
    last = [[0.0] * (k - 1) + [w] for w in {sizes[-1] / n, 1.0, 1.0 / k, sizes[-1] / k}]
    return {"mean-of-means": [combine(parts, [1.0 / k] * k)],
            "sum-of-means": [combine(parts, [1.0] * k)],
            "divide-by-steps": [combine(parts, [s / k for s in sizes])],
            "zeroed-in-loop": [combine(parts, w) for w in last] if k > 1 else []}


# -- calling and judging accumulated_grads -------------------------------------------------
def call_acc(ctx, params, x, y, m, memory=False):
    result = ctx.call(ACC, params, x, y, m, measure_memory=memory)
    got = ctx.unpack(result.value if memory else result, 4, ACC, ", ".join(GRADS))
    return (list(got), result) if memory else list(got)


def narrow(g) -> bool:
    """A float array of less than float64's precision (float32, float16)."""
    return g.dtype.kind == "f" and g.dtype.itemsize < 8


def half_representable(got) -> bool:
    """Whether every entry is exactly a float16 number, or exactly a bfloat16 one (a float32 whose
    low 16 bits are zero): what a half-precision buffer handed back as float64 looks like. The
    right answer's entries almost never are."""
    values = np.concatenate([np.asarray(g, dtype=np.float64).ravel() for g in got])
    if not values.size or not np.all(np.isfinite(values)) or not np.any(values):
        return False
    with np.errstate(over="ignore"):
        fp16 = np.array_equal(values.astype(np.float16).astype(np.float64), values)
    as32 = values.astype(np.float32)
    bf16 = np.array_equal(as32.astype(np.float64), values) and not np.any(as32.view(np.uint32) & 0xFFFF)
    return bool(fp16 or bf16)


def all_close(a, b) -> bool:
    """Every array of ``a`` close to its partner in ``b`` (ordinary tolerance); never raises."""
    try:
        return len(a) == len(b) and all(np.shape(u) == np.shape(v) and close(u, v) for u, v in zip(a, b))
    except (TypeError, ValueError):
        return False


def close(u, v) -> bool:
    try:
        return bool(np.allclose(np.asarray(u, dtype=np.float64), v, rtol=1e-6, atol=1e-8))
    except (TypeError, ValueError):
        return False


def expect_accumulated(ctx, params, x, y, m, got=None):
    """The learner's accumulated gradient must be the full batch's, to TOL of the scale."""
    got = call_acc(ctx, params, x, y, m) if got is None else got
    want, parts = ctx.ref.mlp_grads(params, x, y), means(ctx, params, x, y, m)
    scale = combine([(s, [np.abs(g) for g in gs]) for s, gs in parts], [s / len(x) for s, _ in parts])
    got = [ctx.as_array(name, g, w, ACC) for name, g, w in zip(GRADS, got, want)]
    errors = [float(np.max(np.abs(g.astype(np.float64) - w), initial=0.0)) / max(float(s.max()), 1e-300)
              for g, w, s in zip(got, want, scale)]
    if max(errors) > TOL or any(narrow(g) for g in got):
        fail = diagnose(ctx, params, x, y, m, got, want, parts, errors)
        raise with_location(ctx, fail, got, want, errors)


def with_location(ctx, fail, got, want, errors):
    """``fail`` with the sentence saying where its worst gradient differs, when its diagnosis (a
    trap, the weights, rounding) does not already say it: every failing check says where."""
    if "The largest difference is at" not in fail.feedback:
        i = int(np.argmax(errors))
        where = ctx.locate(GRADS[i], np.asarray(got[i], dtype=np.float64), want[i])
        if where:
            fail.feedback += f"\n{where}"
    return fail


def diagnose(ctx, params, x, y, m, got, want, parts, errors) -> Fail:
    """Why ``got`` is not the full batch's gradient, named by how the answer behaves."""
    at = where(x, m)
    trap = EXPLAIN.__getitem__
    low = [(n, g.dtype) for n, g in zip(GRADS, got) if narrow(g)]
    if low:
        name, dtype = low[0]
        if dtype.itemsize <= 2:
            return Fail(f"{at}: `{name}` from {ACC} is {dtype}. {trap('half-precision-accumulator')}",
                        "half-precision-accumulator")
        return Fail(f"{at}: `{name}` from {ACC} is {dtype} where the contract wants "
                    f"{ctx.question.contract_dtype(ACC, name)}.")
    again = call_acc(ctx, params, x, y, m)
    if not all_close(again, got):
        if grew_by(again, got, want):
            return Fail(f"{at}: called twice with the same arguments, {ACC} answered differently, and "
                        f"the second answer is the first plus the right gradient. {trap('stale-buffer')}",
                        "stale-buffer")
        return Fail(f"{at}: called twice with the same arguments, {ACC} answered differently. It must "
                    "depend on its arguments only: nothing random, nothing kept from an earlier call.")
    for trap_id, forms in wrong_answers(parts, len(x)).items():
        for form in forms:
            if not all_close(form, want) and all_close(got, form):
                return Fail(f"{at}: {ACC} is wrong. {trap(trap_id)}", trap_id)
    if len(parts) > 1 and only_last_counts(ctx, params, x, y, m, got):
        return Fail(f"{at}: changing the targets of the first micro-batch did not change your answer, "
                    f"changing the last one's did. {trap('zeroed-in-loop')}", "zeroed-in-loop")
    weights = weights_of(parts, got)
    right = np.array([size / len(x) for size, _ in parts])
    if weights is not None and np.max(np.abs(weights - right)) > 1e-4 * right.max():
        return Fail(f"{at}: {ACC} is wrong. Your answer adds up the micro-batches' mean gradients g_k "
                    f"with the weights {shown(weights)}; the full batch's gradient weights them by "
                    f"n_k / N = {shown(right)}. Each micro-batch counts as its share of the rows, and "
                    "every one of them must be added exactly once.")
    if TOL < max(errors) <= FLOAT32_BAND:  # float32 is common practice: told, never named a trap
        return Fail(f"{at}: {ACC} is off by {max(errors):.1e} of the size of its partial sums, far more "
                    f"than float64 rounding (about 1e-15) but just what float32 rounding gives: "
                    f"float32 where the contract wants {ctx.question.contract_dtype(ACC, GRADS[0])}.")
    if FLOAT32_BAND < max(errors) <= HALF_BAND and half_representable(got):
        return Fail(f"{at}: {ACC} is off by {max(errors):.1e} of the size of its partial sums, and every "
                    "entry of your answer is a float16 or bfloat16 number: the rounding of a "
                    f"half-precision buffer. {trap('half-precision-accumulator')}", "half-precision-accumulator")
    i = int(np.argmax(errors))
    k = len(parts)
    return ctx.mismatch(GRADS[i], got[i], want[i], ACC, counts={
        "K, the number of micro-batches": k, "micro_batch": m, "N, the number of rows": len(x)},
        example=lambda: f"{at}. {single_batch_note(ctx, params, x, y, m)}")


def weights_of(parts, got):
    """The weights w_k for which got = sum_k w_k g_k (the micro-batches' mean gradients), fitted
    by least squares over every entry, when they explain got to 1e-6 of its size: an answer that
    weights, drops or repeats micro-batches. None when they do not (rounding noise, another mistake)."""
    G = np.stack([np.concatenate([g.ravel() for g in gs]) for _, gs in parts], axis=1)   # P, K
    v = np.concatenate([np.asarray(g, dtype=np.float64).ravel() for g in got])          # P
    if G.shape[0] <= G.shape[1] or not np.any(v):
        return None  # fewer entries than micro-batches, or nothing to weigh: zeros say nothing
    w = np.linalg.lstsq(G, v, rcond=None)[0]
    return w if np.linalg.norm(G @ w - v) <= 1e-6 * np.linalg.norm(v) else None


def shown(weights) -> str:
    tiny = 1e-9 * float(np.max(np.abs(weights)))
    text = ", ".join(f"{(w if abs(w) > tiny else 0.0) + 0.0:.4g}" for w in weights[:6])
    return f"[{text}{', ...' if len(weights) > 6 else ''}]"


def grew_by(again, got, want) -> bool:
    """Is the second answer the first plus the right gradient (a buffer kept from the first)?"""
    try:
        return all_close([np.asarray(a, dtype=np.float64) - g for a, g in zip(again, got)], want)
    except (TypeError, ValueError):
        return False


def only_last_counts(ctx, params, x, y, m, got) -> bool:
    """Does the answer ignore a change to the first micro-batch's targets, yet follow one to the
    last micro-batch's? (Zeros and constants follow neither.)"""
    first, last, start = y.copy(), y.copy(), bounds(len(x), m)[-1][0]
    # as large as the targets themselves: a change any buffer's rounding would hide is no evidence
    first[:m] += max(1.0, float(np.abs(y).max())) * ctx.rng.standard_normal(first[:m].shape)
    last[start:] += 1.0 + ctx.rng.random(last[start:].shape)
    if all_close(ctx.ref.mlp_grads(params, x, first), ctx.ref.mlp_grads(params, x, y)):
        return False
    moved_first = call_acc(ctx, params, x, first, m)
    moved_last = call_acc(ctx, params, x, last, m)
    return all_close(moved_first, got) and not all_close(moved_last, got)


def single_batch_note(ctx, params, x, y, m) -> str:
    """What the learner's answer does with micro_batch = N, one micro-batch: mlp_grads itself."""
    check_grads = "if your accumulated_grads uses your mlp_grads, get that right first."
    if m == len(x):
        return f"With one micro-batch the answer is the batch's own gradient: {check_grads}"
    try:
        right = all_close(call_acc(ctx, params, x, y, len(x)), ctx.ref.mlp_grads(params, x, y))
    except Fail:
        right = False
    if not right:
        return f"With micro_batch = N, one micro-batch, your answer is wrong too: {check_grads}"
    if m > len(x):
        return ("With micro_batch = N your answer is right: a micro_batch larger than N is one "
                "micro-batch holding all N rows.")
    return "With micro_batch = N, one micro-batch, your answer is right."
