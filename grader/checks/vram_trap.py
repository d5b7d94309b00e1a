"""Hidden checks for vram_trap: keep fewer activations, recompute the rest.

Shapes: params [(W_i (D_i, D_{i+1}), b_i (D_{i+1},)) for i < L], x (N, D_0), y (N, D_L).
The reference is the solution notebook (``ctx.ref``); the known-wrong recomputations below
are the traps, computed here on the same inputs so a wrong answer can be named.

The memory budget. ``mlp_loss_and_grads`` is called once, memory measured, on a net of
L = 36 layers of width D = 32 with a batch of N = 2048 rows at segment_size s = 6
(= sqrt(L)). One activation (N, D) of float64 is A = 2048 * 32 * 8 B = 0.5 MiB; the
parameters and their gradients are 36 * (32 * 32 + 32) * 8 B = 297 KiB (0.58 A) each.
The peak (the larger of the resident high-water mark, reset before the call, and
tracemalloc's peak; see grader/sandbox/worker.py) must stay within

    budget(s) = (ceil(L / s) + s + 4) * A + params + grads
    budget(6) = 16 * 0.5 MiB + 2 * 297 KiB = 8,996,864 B = 8.58 MiB (17.2 A)

ceil(L / s) checkpoints, the s layer inputs of the segment being recomputed, and 4
activations of slack for the temporaries of a layer's backward pass (dh, dz, the new dh)
and the allocator. The budget depends on s, so only s = 6 is graded. Measured on the 2-core
reference machine, 10 grades each (min to max): the solution peaks at 12.4 to 12.6 A, a
torch.utils.checkpoint answer at 14.4 to 15.0 A (torch's one-off set-up included); the
solution fits budget(s) at every s from 1 to 36 (tests/test_vram_trap.py). Storing every
layer input peaks at 41.6 to 41.8 A in numpy and 39.8 to 40.2 A in torch tensors (which
tracemalloc never sees: 0.07 A traced), 2.3 times the budget; keeping a float z per layer
inside each segment peaks at 22.5 to 22.8 A, over budget but not named stores-everything.
An answer over budget that does not store everything is measured once more at s = 12: each
more layer of a segment costs about 1 activation in the solution (0.96 measured) and about 2
when a float z is kept beside each layer input (2.0): 1.5 or more names mask-not-packed.

Boundaries: the ReLU's derivative at exactly 0 is 0 (the mask is z > 0). Finite differences
are not valid at a kink, so a net of halves (``dyadic_net``: exact arithmetic, some z exactly
0) is compared with the reference's own gradients; a single-layer net has no ReLU at all.
"""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from grader.engine.gradcheck import upstream
from grader.engine.question import Fail, Question, Trap

MLP, RELU_F, RELU_B = "mlp_loss_and_grads", "relu_forward_packed", "relu_backward_packed"
ONE = np.float64(1.0)  # the loss is the output itself: no upstream gradient to contract with
MEM_L, MEM_D, MEM_N, MEM_S, SLACK = 36, 32, 2048, 6, 4
MiB = 1024 * 1024

QUESTION = Question("vram_trap", "Keep fewer activations, recompute the rest", traps=[
    Trap("stores-everything", "Your gradients are right, but your function keeps every layer's "
         "activations alive until the backward pass, so its memory grows with the depth. Keep only "
         "the input of every segment_size-th layer during the forward pass, recompute one segment "
         "at a time during the backward pass, and drop each segment (let go of every name that "
         "points at its arrays) before moving to the previous one."),
    Trap("wrong-recompute", "Your gradients equal those of a recomputation that starts from the "
         "wrong activation (another segment's checkpoint, the input x, or the output of the "
         "segment's first layer instead of its input). Each segment must be recomputed from exactly "
         "the array that entered its first layer in the forward pass, running the same layers."),
    Trap("mask-not-packed", "Your ReLU mask takes a byte or more per element (a bool or uint8 "
         "array of the same size as z, or z itself). The backward pass needs one bit per element: "
         "pack the signs eight to a byte with np.packbits over the flattened array, and unpack them "
         "with np.unpackbits in the backward pass."),
], kinks={"relu-at-0": "a pre-activation z exactly 0 (the mask is z > 0)"},
   memory_paths=("segment_size divides L",))


# -- input generators ------------------------------------------------------------------
def mlp(rng, widths, n):
    """params for ``widths`` (He-scaled so activations stay O(1) at any depth), x and y."""
    params = [(rng.standard_normal((a, b)) * math.sqrt(2.0 / a), rng.standard_normal(b) * 0.1)
              for a, b in zip(widths[:-1], widths[1:])]
    return params, rng.standard_normal((n, widths[0])), rng.standard_normal((n, widths[-1]))


def away_from_zero(rng, shape) -> np.ndarray:
    """Values with |z| >= 0.05, so finite differences never straddle the ReLU's kink."""
    return rng.choice([-1.0, 1.0], size=shape) * rng.uniform(0.05, 2.0, size=shape)


def dyadic_net(rng, widths, n):
    """params, x, y of halves in [-1, 1]: every product and sum is exact in float64, so some
    pre-activations are exactly 0, the ReLU's boundary (its derivative there is 0: the mask
    is z > 0). Redrawn until a mask taken as z >= 0 would change the gradients."""
    half = lambda shape: rng.integers(-2, 3, size=shape) / 2.0  # noqa: E731
    for _ in range(100):
        params = [(half((a, b)), half(b)) for a, b in zip(widths[:-1], widths[1:])]
        x, y = half((n, widths[0])), half((n, widths[-1]))
        if not np.allclose(flat(backprop(params, x, y, inclusive=True)), flat(backprop(params, x, y))):
            return params, x, y
    raise RuntimeError("no network with a decisive exact zero drawn")  # never with these sizes


def flat(grads) -> np.ndarray:
    return np.concatenate([np.ravel(g) for pair in grads for g in pair])


def memory_budget(L, D, N, s) -> int:
    """Bytes allowed for one call: ceil(L/s) + s + SLACK activations (N, D), params, grads."""
    activation, weights = N * D * 8, L * (D * D + D) * 8
    return (math.ceil(L / s) + s + SLACK) * activation + 2 * weights


# -- the known-wrong recomputations (traps) ----------------------------------------------
def _run(params, h, start, stop, relu=True):
    """Layers start..stop-1 from h: their inputs and outputs [h_start .. h_stop], and their z
    (``relu=False``: a recomputation that forgets the ReLU between the segment's layers)."""
    L, hs, zs = len(params), [h], []
    for i in range(start, stop):
        W, b = params[i]
        zs.append(hs[-1] @ W + b)                                  # N, D_{i+1}
        hs.append(zs[-1] if i == L - 1 or not relu else np.maximum(zs[-1], 0.0))
    return hs, zs


def recomputed_from(params, x, y, s, source, relu=True, inclusive=False):
    """Grads when the segment starting at layer ``start`` is recomputed from the true forward
    activation h_{source(start)} instead of h_start (uniform widths only), ``relu`` as in
    ``_run``, and ``inclusive``: the ReLU's mask taken as z >= 0 instead of z > 0."""
    L, N = len(params), x.shape[0]
    truth, _ = _run(params, x, 0, L)
    dh, grads = (truth[-1] - y) / N, [None] * L
    for start in reversed(range(0, L, s)):
        stop = min(start + s, L)
        hs, zs = _run(params, truth[min(max(source(start), 0), L)], start, stop, relu)
        for i in reversed(range(start, stop)):
            z = zs[i - start]
            dz = dh if i == L - 1 else dh * ((z >= 0) if inclusive else (z > 0))
            grads[i] = (hs[i - start].T @ dz, dz.sum(axis=0))
            dh = dz @ params[i][0].T
    return grads


def backprop(params, x, y, inclusive=False):
    """Plain backpropagation (one segment), with the mask z >= 0 when ``inclusive``: the
    wrong variant the exact zeros of ``dyadic_net`` expose (any widths)."""
    return recomputed_from(params, x, y, len(params), lambda start: start, inclusive=inclusive)


def wrong_recomputes(params, x, y, s) -> dict:
    """The wrong-recompute variants, flattened: from x, from the next layer's input (the
    checkpoint saved after its layer ran), from the previous segment's checkpoint, and a
    recomputation that forgets the ReLU between the segment's layers."""
    sources = (lambda start: 0, lambda start: start + 1, lambda start: start - s)
    return {"wrong-recompute": [flat(recomputed_from(params, x, y, s, source)) for source in sources]
            + [flat(recomputed_from(params, x, y, s, lambda start: start, relu=False))]}


# -- comparing gradients -------------------------------------------------------------------
def learner_grads(ctx, value, params, where: str):
    """Unpack ``(loss, grads)`` and check that grads is a list of (dW_i, db_i) shaped like params."""
    loss, grads = ctx.unpack(value, 2, MLP, "loss, grads")
    if not isinstance(grads, (list, tuple)) or len(grads) != len(params):
        size = f"{len(grads)} items" if isinstance(grads, (list, tuple)) else f"a {type(grads).__name__}"
        raise Fail(f"{where}`grads` must be a list of {len(params)} pairs (dW_i, db_i), one per "
                   f"layer, but it is {size}.")
    checked = []
    for i, (pair, (W, b)) in enumerate(zip(grads, params)):
        dW, db = ctx.unpack(pair, 2, MLP, f"grads[{i}] = (dW_{i}, db_{i})")
        checked.append((ctx.as_array(f"dW_{i}", dW, W, MLP), ctx.as_array(f"db_{i}", db, b, MLP)))
    return loss, checked


def missing_layers(grads, expected) -> list[int]:
    """Layers whose gradients are all zeros where the right ones are not: never reached."""
    return [i for i, (pair, want) in enumerate(zip(grads, expected))
            if not any(np.any(g) for g in pair) and any(np.any(w) for w in want)]


def expect_grads(ctx, grads, expected, where: str, traps: dict | None = None, n=None) -> None:
    """All (dW_i, db_i) must match ``expected``; else name a trap, the layers that got no
    gradient at all, or the first wrong layer (``n``, the batch size, names a factor of N)."""
    got = flat(grads)
    if ctx.close(got, flat(expected)):
        return
    for trap_id, variants in (traps or {}).items():
        if any(v.shape == got.shape and ctx.close(got, v) for v in variants):
            raise Fail(f"{where}the gradients are wrong. {QUESTION.trap(trap_id).explanation}", trap_id)
    missing = missing_layers(grads, expected)
    if missing:
        which = (f"layer {missing[0]}" if len(missing) == 1 else f"layers {', '.join(map(str, missing))}")
        raise Fail(f"{where}{which} (of 0..{len(grads) - 1}) got no gradient "
                   "(all zeros): the backward pass never reached them. When segment_size does not "
                   "divide L the last segment is shorter, and it still needs its recomputation.")
    counts = {"N, the batch size": n} if n else None
    for i, (pair, want) in enumerate(zip(grads, expected)):
        for name, g, w in ((f"dW_{i}", pair[0], want[0]), (f"db_{i}", pair[1], want[1])):
            if not ctx.close(g, w):
                wrong = ctx.mismatch(name, g, w, MLP, counts=counts).feedback.rstrip(".")
                raise Fail(f"{where}{wrong} (layer {i} of {len(grads)}).")


def expect_loss(ctx, loss, params, x, y, where: str) -> None:
    ref_loss = float(ctx.ref.mlp_loss_and_grads(params, x, y, len(params))[0])
    try:
        ctx.expect_array("loss", loss, np.float64(ref_loss), MLP, counts={"N, the batch size": x.shape[0]})
    except Fail as fail:
        raise Fail(where + fail.feedback + " The loss is 0.5 * sum((out - y) ** 2) / N.") from None


def loss_of(ctx, params, x, y, i, which):
    """The reference loss as a function of layer i's weight (which=0) or bias (which=1)."""
    def f(v):
        layer = list(params[i])
        layer[which] = v
        changed = params[:i] + [tuple(layer)] + params[i + 1:]
        return ctx.ref.mlp_loss_and_grads(changed, x, y, len(params))[0]
    return f


# -- checks ------------------------------------------------------------------------------
@QUESTION.check("loss and gradients match finite differences (small net)", points=2, hints=(
    "The last layer has no ReLU; the loss divides by the batch size N.",
    "dW_i needs the layer's input h_i, db_i sums dz_i over the batch.",
))
def small_net_gradcheck(ctx):
    params, x, y = mlp(ctx.rng, [5, 8, 6, 4], 6)
    loss, grads = learner_grads(ctx, ctx.call(MLP, params, x, y, 2), params, "")
    expect_loss(ctx, loss, params, x, y, "")
    for i, ((W, b), (dW, db)) in enumerate(zip(params, grads)):
        ctx.expect_gradient(f"dW_{i}", dW, loss_of(ctx, params, x, y, i, 0), W, ONE, MLP)
        ctx.expect_gradient(f"db_{i}", db, loss_of(ctx, params, x, y, i, 1), b, ONE, MLP)


@QUESTION.check("same gradients as full backpropagation (deeper net, uneven widths)", points=2,
                kinks=("relu-at-0",), hints=(
    "Recomputation must reproduce the forward pass exactly: same layers, same input.",
    "Check every shape: layer i maps width D_i to D_{i+1}, and widths differ here.",
))
def matches_full_backprop(ctx):
    widths = [7, 12, 5, 9, 16, 3, 11, 6, 10, 8, 4]
    params, x, y = mlp(ctx.rng, widths, 9)
    L = len(params)
    s = round(math.sqrt(L))
    where = f"With segment_size={s} on a {L}-layer net: "
    loss, grads = learner_grads(ctx, ctx.call(MLP, params, x, y, s), params, where)
    expect_loss(ctx, loss, params, x, y, where)
    expect_grads(ctx, grads, ctx.ref.mlp_loss_and_grads(params, x, y, L)[1], where, n=len(x))
    # Exact zeros at the ReLUs (the mask is z > 0; no finite differences at a kink: the
    # reference's gradients), then a single layer, which has no ReLU at all.
    params, x, y = dyadic_net(ctx.rng, [6, 8, 8, 8, 8, 4], 7)
    where = "On a 5-layer net whose pre-activations z are exactly 0 in places (segment_size=2): "
    _, grads = learner_grads(ctx, ctx.call(MLP, params, x, y, 2), params, where)
    expected = ctx.ref.mlp_loss_and_grads(params, x, y, len(params))[1]
    if not ctx.close(flat(grads), flat(expected)) and ctx.close(flat(grads), flat(backprop(params, x, y, True))):
        raise Fail(f"{where}your gradients pass the gradient through the ReLU where z is exactly 0. "
                   "The ReLU's derivative at 0 is 0: the mask is z > 0, not z >= 0.")
    expect_grads(ctx, grads, expected, where)
    params, x, y = mlp(ctx.rng, [5, 3], 4)
    where = "On a 1-layer net (no ReLU, segment_size=1): "
    loss, grads = learner_grads(ctx, ctx.call(MLP, params, x, y, 1), params, where)
    expect_loss(ctx, loss, params, x, y, where)
    expect_grads(ctx, grads, ctx.ref.mlp_loss_and_grads(params, x, y, 1)[1], where)


@QUESTION.check("any segment_size gives the same gradients (1, sqrt(L), L, a non-divisor)", points=2, hints=(
    "Which array entered a segment's first layer in the forward pass? Recompute from exactly that one.",
    "When segment_size does not divide L, the last segment is shorter: every layer still needs its gradient.",
))
def every_segment_size(ctx):
    params, x, y = mlp(ctx.rng, [6] * 10, 8)  # L = 9
    L = len(params)
    expected = ctx.ref.mlp_loss_and_grads(params, x, y, L)[1]
    ref_loss = float(ctx.ref.mlp_loss_and_grads(params, x, y, L)[0])
    answers = {}  # every segment size first: a recompute is judged by how the answers depend on it
    for s in (1, 3, L, 4):
        answers[s] = learner_grads(ctx, ctx.call(MLP, params, x, y, s), params,
                                   f"With segment_size={s} on a {L}-layer net: ")
    right_at_one = False
    for s, (_, grads) in answers.items():
        where = f"With segment_size={s} on a {L}-layer net: "
        try:
            expect_grads(ctx, grads, expected, where, traps=wrong_recomputes(params, x, y, s), n=len(x))
        except Fail as fail:
            if fail.trap is None and right_at_one and not missing_layers(grads, expected):
                # Right when every layer is its own segment (nothing recomputed past one layer),
                # wrong once a segment holds several: the recomputation is what goes wrong.
                raise Fail(f"{fail.feedback} With segment_size=1 they were right, so the "
                           "layers recomputed inside a segment differ from the forward pass "
                           "(a ReLU left out, another input, a layer run twice or skipped). "
                           + QUESTION.trap("wrong-recompute").explanation, "wrong-recompute") from None
            depends = segment_dependent(ctx, answers, ref_loss)
            if fail.trap is None and depends and not missing_layers(grads, expected):
                # The forward is right (the loss is), but the gradients change with segment_size:
                # only the recomputation depends on it (issue 24: a segment that skips its last ReLU).
                raise Fail(f"{fail.feedback} Your loss is right at every segment_size, but your gradients "
                           f"change with it ({depends}): the forward pass is right and the recomputed "
                           "segments are not. " + QUESTION.trap("wrong-recompute").explanation,
                           "wrong-recompute") from None
            raise
        right_at_one = right_at_one or s == 1


def segment_dependent(ctx, answers: dict, ref_loss: float) -> str | None:
    """"segment_size=a and b give different gradients" when every loss so far is right and two
    segment sizes' gradients differ; None otherwise. Checkpointing must not change a gradient."""
    losses_right = all(isinstance(loss, (int, float, np.floating, np.ndarray)) and np.size(loss) == 1
                       and ctx.close(float(np.asarray(loss).reshape(-1)[0]), ref_loss)
                       for loss, _ in answers.values())
    if not losses_right or len(answers) < 2:
        return None
    sizes = list(answers)
    for a in sizes:
        for b in sizes:
            if a < b and not ctx.close(flat(answers[a][1]), flat(answers[b][1])):
                return f"segment_size={a} and {b} give different gradients"
    return None


def cost_per_segment_layer(ctx, params, x, y, peak) -> float | None:
    """Activations each more layer of a segment costs, from a second measured call at twice the
    segment size: the peak ~ (ceil(L / s) + c s + const) activations, and c is about 1 when a
    segment keeps its layer inputs and packed masks, about 2 when it keeps a float z per layer
    too (measured: 0.96 and 2.0). Behaviour, not equality: it names the mistake in any form."""
    s2 = 2 * MEM_S
    second = ctx.call(MLP, params, x, y, s2, measure_memory=True)
    peak2 = (second.memory or {}).get("peak")
    if peak2 is None:
        return None
    activation = MEM_N * MEM_D * 8
    fewer_checkpoints = math.ceil(MEM_L / MEM_S) - math.ceil(MEM_L / s2)
    return ((peak2 - peak) / activation + fewer_checkpoints) / (s2 - MEM_S)


@QUESTION.check(f"peak memory within budget ({MEM_L} layers, segment_size={MEM_S})", points=3,
                memory=("segment_size divides L",), hints=(
    "A name that still points at an array keeps it alive: reuse names, `del`, or `pop` what you consumed.",
    "At the peak you need the checkpoints plus one segment's layer inputs and packed masks, nothing more.",
))
def memory_budget_check(ctx):
    params, x, y = mlp(ctx.rng, [MEM_D] * (MEM_L + 1), MEM_N)
    where = f"On the {MEM_L}-layer net (segment_size={MEM_S}): "
    with ThreadPoolExecutor(1) as pool:  # the reference runs on the other core meanwhile
        reference = pool.submit(ctx.ref.mlp_loss_and_grads, params, x, y, MEM_S)
        result = ctx.call(MLP, params, x, y, MEM_S, measure_memory=True)
        _, grads = learner_grads(ctx, result.value, params, where)
        expected = reference.result()[1]
    try:
        expect_grads(ctx, grads, expected, where, n=len(x))
    except Fail as fail:
        raise Fail(fail.feedback + " Memory is judged once the gradients are right.") from None
    peak = (result.memory or {}).get("peak")
    if peak is None:
        why = (result.memory or {}).get("unavailable", "no memory measurement came back")
        raise Fail(f"Peak memory cannot be measured on this platform ({why}), so this check cannot "
                   "pass here; grade on Linux to get its points.")
    activation, budget = MEM_N * MEM_D * 8, memory_budget(MEM_L, MEM_D, MEM_N, MEM_S)
    if peak <= budget:
        return
    kept = peak / activation
    over = (f"{where}your call peaked at {peak / MiB:.1f} MiB, about {kept:.0f} activations of shape "
            f"({MEM_N}, {MEM_D}), over the budget of {budget / MiB:.2f} MiB (ceil(L / s) + s + {SLACK} = "
            f"{math.ceil(MEM_L / MEM_S) + MEM_S + SLACK} activations plus parameters and gradients).")
    if kept >= 0.75 * MEM_L:  # about one activation per layer: nothing was let go
        raise Fail(f"{over} {QUESTION.trap('stores-everything').explanation}", "stores-everything")
    per_layer = cost_per_segment_layer(ctx, params, x, y, peak)
    if per_layer is not None and per_layer >= 1.5:
        raise Fail(f"{over} Measured again at segment_size={2 * MEM_S}, each more layer in a segment "
                   f"costs about {per_layer:.1f} activations, not 1: every recomputed layer keeps a "
                   "float array as large as its input beside it (z kept to take the mask from, or an "
                   "unpacked mask). Inside a segment keep only the layer inputs and the packed masks. "
                   + QUESTION.trap("mask-not-packed").explanation, "mask-not-packed")
    raise Fail(f"{over} That is fewer than one per layer but more than checkpointing needs: inside a "
               "segment keep only the layer inputs and the packed masks (a float z per layer doubles "
               "the segment), and drop each segment before recomputing the previous one.")


@QUESTION.check("the ReLU mask is packed, one bit per element, and round-trips", points=2, hints=(
    "How many bytes does a mask of 91 elements need at one bit each?",
    "Use the same bit order as np.packbits over the flattened array; 0 counts as not positive.",
))
def packed_mask(ctx):
    z = away_from_zero(ctx.rng, (13, 7))
    z[ctx.rng.random(z.shape) < 0.15] = 0.0  # exact zeros: not positive, mask bit 0
    a, mask = ctx.unpack(ctx.call(RELU_F, z), 2, RELU_F, "a, mask")
    ref_a, ref_mask = ctx.ref.relu_forward_packed(z)
    ctx.expect_array("a", a, ref_a, RELU_F)
    if not isinstance(mask, np.ndarray):
        raise Fail(f"`mask` from {RELU_F} must be a numpy uint8 array, not {type(mask).__name__}")
    if mask.size >= z.size:
        raise Fail(f"`mask` from {RELU_F} has {mask.size} entries ({mask.dtype}) for {z.size} elements "
                   f"of z, {mask.nbytes} bytes where {ref_mask.nbytes} are enough. "
                   f"{QUESTION.trap('mask-not-packed').explanation}", "mask-not-packed")
    if mask.dtype != np.uint8 or mask.shape != ref_mask.shape:
        raise Fail(f"`mask` from {RELU_F} must be uint8 of shape {ref_mask.shape} "
                   f"(ceil({z.size} / 8) bytes), not {mask.dtype} of shape {mask.shape}")
    ctx.expect_array("mask", mask, ref_mask, RELU_F, integer=True,
                     example=ctx.example({"z > 0 (first 16)": (z.ravel()[:16] > 0).astype(int)},
                                         ref_mask[:2], mask[:2]))
    for shape in ((13, 7), (2, 3, 5)):
        z = away_from_zero(ctx.rng, shape)
        _, ref_mask = ctx.ref.relu_forward_packed(z)
        da = upstream(ctx.rng, shape)
        dz = ctx.call(RELU_B, da, ref_mask, shape)
        ctx.expect_gradient("dz", dz, lambda v: ctx.ref.relu_forward_packed(v)[0], z, da, RELU_B)


@QUESTION.check("inputs and parameters left unchanged", points=1, hints=(
    "Does any function write into x, y, a weight, a bias, da or the mask (`+=`, `[...] =`, `out=`)?",
))
def inputs_unchanged(ctx):
    params, x, y = mlp(ctx.rng, [4, 6, 5, 3], 5)
    z = away_from_zero(ctx.rng, (6, 5))
    z[0, :2] = 0.0
    _, mask = ctx.ref.relu_forward_packed(z)
    da = upstream(ctx.rng, z.shape)
    ctx.expect_inputs_unchanged([
        (MLP, (params, x, y, 2), ["params", "x", "y"], ctx.ref.mlp_loss_and_grads(params, x, y, 2)),
        (RELU_F, (z,), ["z"], ctx.ref.relu_forward_packed(z)),
        (RELU_B, (da, mask, z.shape), ["da", "mask"], ctx.ref.relu_backward_packed(da, mask, z.shape))])
