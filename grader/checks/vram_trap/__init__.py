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
solution fits budget(s) at every s from 1 to 36 (tests/questions/test_vram_trap.py). Storing every
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

import numpy as np

from backprop_traps.grader.engine.gradcheck import upstream
from backprop_traps.grader.checks.vram_trap.probes import (MEM_D, MEM_L, MEM_N, MEM_S, MLP, RELU_B, RELU_F, SLACK,
                                            away_from_zero, flat, learner_grads, memory_budget, missing_layers, mlp)
from backprop_traps.grader.checks.vram_trap.traps import TRAPS, backprop, dyadic_net, segment_dependent, wrong_recomputes
from backprop_traps.grader.engine.memory_verdict import peak_of
from backprop_traps.grader.engine.question import Fail, Question

ONE = np.float64(1.0)  # the loss is the output itself: no upstream gradient to contract with
MiB = 1024 * 1024

QUESTION = Question("vram_trap", "Keep fewer activations, recompute the rest", traps=TRAPS,
                    kinks={"relu-at-0": "a pre-activation z exactly 0 (the mask is z > 0)"},
                    memory_paths=("segment_size divides L",),
                    measured_calls=1)  # a second only when the first is over budget


# -- input generators ------------------------------------------------------------------


# -- the known-wrong recomputations (traps) ----------------------------------------------


# -- comparing gradients -------------------------------------------------------------------


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
    reference = ctx.meanwhile(ctx.ref.mlp_loss_and_grads, params, x, y, MEM_S)
    result = ctx.call(MLP, params, x, y, MEM_S, measure_memory=True)
    _, grads = learner_grads(ctx, result.value, params, where)
    expected = reference()[1]
    try:
        expect_grads(ctx, grads, expected, where, n=len(x))
    except Fail as fail:
        raise Fail(fail.feedback + " Memory is judged once the gradients are right.") from None
    peak = peak_of(result)
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


@QUESTION.check("relu_forward_packed and relu_backward_packed: the mask's size, and a round trip", points=2, hints=(
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
        ctx.expect_gradient("dz", dz, lambda v: ctx.ref.relu_forward_packed(v)[0], z, da, RELU_B,
                            rows=True)  # elementwise


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
