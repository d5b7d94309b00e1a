"""Hidden checks for per_step_update_trap: a shared filter's gradient is the sum over every step.

Shapes: x (N, C_in, L), w (C_out, C_in, K), b (C_out,), out and dout (N, C_out, L_out) with
L_out = (L + 2P - K) // S + 1. The reference is the solution notebook (``ctx.ref``). Every
known-wrong variant (trap) is built by calling the reference on altered inputs (one output
position of dout kept, one example, the filter reversed, stride 1), so the right math is
written nowhere here. The inputs that name a trap are ones where it shows: batch >= 2,
N != L_out (averaging over the batch and over positions differ), L_out >= 3, stride >= 2.

The training check. The grader owns the loop and the data: random x (N=4, C_in=2, L=47),
targets from the reference forward with a planted filter w* (C_out=2, K=3) and bias b*,
stride 2, padding 1, so L_out = 24. Starting from w = 0, b = 0 it takes TRAIN_STEPS = 30
plain SGD steps, lr = TRAIN_LR / L_out = 0.8 / 24, on loss = 0.5 * sum((out - y)**2) / N;
each step sends dout = (out - y) / N to the learner's conv1d_backward and uses its dw, db.
It passes when the loss falls by TRAIN_FACTOR = 1e-4 (four orders of magnitude).
Why these numbers: the loss is a well-conditioned least-squares problem (96 windows for
7 numbers per output channel, curvature about L_out in every direction), so the right
gradient converges geometrically; over 8000 seeds its worst fall after 30 steps was to
about 1e-9 of the start (median about 1e-19), five orders below the bar. The last-step-only
gradient sees one window per example, 4 equations for 7 unknowns per channel: it fits
those and stalls (its best fall over the same seeds was to about 6e-2, median 0.6), almost
three orders above the bar. mean-over-steps (L_out times too small a step) also stays above
it (best about 2e-2).
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.gradcheck import upstream
from backprop_traps.grader.engine.question import Fail, Question, Trap

FWD, BWD = "conv1d_forward", "conv1d_backward"
TRAIN_SHAPE = dict(n=4, c_in=2, c_out=2, length=47, k=3, stride=2, padding=1)
TRAIN_STEPS = 30
TRAIN_LR = 0.8
TRAIN_FACTOR = 1e-4

QUESTION = Question("per_step_update_trap", "A shared filter's gradient is the sum over every step", traps=[
    Trap("last-step-only", "Your filter gradient holds the contribution of a single output position: "
         "inside the loop over positions it is assigned (overwritten) where it should be added to, so "
         "only one window survives. The same filter is used at every position, so its gradient is the "
         "sum of every position's contribution: start from zeros and accumulate, or sum in one go.",
         symptom="Your filter gradient holds the contribution of a single output position: the others are lost."),
    Trap("mean-over-steps", "Your filter gradient is the average of the positions' contributions, "
         "L_out times too small. The loss adds up the error of every output position, so the shared "
         "filter's gradient is their sum, not their mean (dout already carries any 1 / N of the loss)."),
    Trap("batch-not-summed", "Your filter or bias gradient misses the sum over the batch: it keeps one "
         "example, averages the examples, or returns one gradient per example. The parameters are "
         "shared by every example, so add all their contributions (dout already carries the 1 / N)."),
    Trap("bias-not-summed", "Your bias gradient misses the sum over positions: it keeps one position, "
         "averages them, or returns one value per position. The bias is added at every output position "
         "of every example, so db sums dout over the batch and the positions, one number per channel."),
    Trap("kernel-flip", "You use the filter reversed, tap K - 1 where tap 0 belongs. The layer is a "
         "cross-correlation (no flip, like torch's conv1d). In the backward pass each window sends its "
         "gradient back through the very tap that read each input: as a scatter there is nothing to "
         "reverse; only written as a sliding window over dout does the filter appear reversed."),
    Trap("stride-ignored", "Your windows sit one step apart, as if the stride were 1: window t starts "
         "at t instead of t * stride in the padded input, so gradients come from and land on the "
         "wrong inputs. Use the same window starts in the backward pass as in the forward pass."),
], kinks={},
    axes={"dx": ("example n", "channel c", "position"), "dw": ("output channel", "input channel", "tap k"),
          "out": ("example n", "channel", "position")},
    # examples, output channels and input channels are independent: fewer are still an input
    shrink={"conv1d_backward": {"N": [(0, 0), (1, 0)], "C_out": [(0, 1), (2, 0)], "C_in": [(1, 1), (2, 1)]}})


# -- inputs ------------------------------------------------------------------------------
def conv_inputs(rng, n, c_in, c_out, length, k):
    """Random x, w, b of the contract's shapes."""
    return (rng.standard_normal((n, c_in, length)), rng.standard_normal((c_out, c_in, k)),
            rng.standard_normal(c_out))


def forward_configs():
    """Every stride 1-3 with every padding 0-2; channels, K and N vary; K > stride. Then the
    boundary cases."""
    for i, (s, p) in enumerate((s, p) for s in (1, 2, 3) for p in (0, 1, 2)):
        yield dict(n=2 + i % 2, c_in=1 + i % 3, c_out=1 + (i + 1) % 3, length=8 + i,
                   k=s + 1 + i % 2, stride=s, padding=p)
    yield from BOUNDARY


# The edges the contract allows: K = 1; a stride longer than the filter (inputs between
# windows that nothing reads); padding longer than the filter (windows that read only
# zeros: their output is the bias); one window over the whole input (L_out = 1); L = 1.
BOUNDARY = [dict(n=2, c_in=2, c_out=3, length=7, k=1, stride=1, padding=0),
            dict(n=2, c_in=2, c_out=2, length=11, k=2, stride=3, padding=0),
            dict(n=2, c_in=1, c_out=2, length=5, k=2, stride=1, padding=3),
            dict(n=3, c_in=2, c_out=2, length=5, k=5, stride=1, padding=0),
            dict(n=1, c_in=1, c_out=1, length=1, k=1, stride=1, padding=0)]


# -- the known-wrong variants, all through the reference ----------------------------------
def at_position(ref, dout, x, w, s, p, t):
    """(dw, db) from output position t alone: what an overwritten accumulator keeps."""
    kept = np.zeros_like(dout)
    kept[:, :, t] = dout[:, :, t]
    return ref.conv1d_backward(kept, x, w, s, p)[1:]


def per_example(ref, dout, x, w, s, p):
    """(dw, db) of each example on its own, stacked on a leading batch axis."""
    grads = [ref.conv1d_backward(dout[i:i + 1], x[i:i + 1], w, s, p) for i in range(x.shape[0])]
    return np.stack([g[1] for g in grads]), np.stack([g[2] for g in grads])


def stride_one(ref, dout, x, w, p):
    """The backward with windows one step apart: dout placed on the first L_out windows of
    the stride-1 convolution, zeros on the rest."""
    full = np.zeros(dout.shape[:2] + (x.shape[2] + 2 * p - w.shape[2] + 1,))
    full[:, :, :dout.shape[2]] = dout
    return ref.conv1d_backward(full, x, w, 1, p)


def param_traps(ref, dout, x, w, s, p):
    """(trap, dw) and (trap, db) candidates for the parameter gradients."""
    _, dw, db = ref.conv1d_backward(dout, x, w, s, p)
    n, l_out = x.shape[0], dout.shape[2]
    positions = [at_position(ref, dout, x, w, s, p, t) for t in reversed(range(l_out))]
    ex_dw, ex_db = per_example(ref, dout, x, w, s, p)
    dw_traps = ([("last-step-only", g[0]) for g in positions]
                + [("mean-over-steps", dw / l_out), ("mean-over-steps", dw / (n * l_out))]
                + [("batch-not-summed", v) for v in (ex_dw[0], ex_dw[-1], dw / n, ex_dw)]
                + [("stride-ignored", stride_one(ref, dout, x, w, p)[1])])
    db_traps = ([("bias-not-summed", g[1]) for g in positions]
                + [("bias-not-summed", v) for v in (db / l_out, db / (n * l_out),
                                                    np.stack([g[1] for g in positions[::-1]], axis=-1))]
                + [("batch-not-summed", v) for v in (ex_db[0], ex_db[-1], db / n, ex_db)])
    return dw_traps, db_traps


# -- comparing, with traps named ----------------------------------------------------------
def named_trap(ctx, got, candidates) -> str | None:
    """The first (trap, wrong value) pair that ``got`` equals, if any."""
    if not isinstance(got, np.ndarray) or got.dtype.kind not in "fiub":
        return None
    for trap_id, wrong in candidates:
        if ctx.match_trap(got, {trap_id: wrong}):
            return trap_id
    return None


def fail_if_trap(ctx, name, got, fn, candidates, what="is wrong", right=None, counts=None):
    """Name the trap ``got`` matches, if any; ``right`` (the reference's value) and ``counts``
    let the feedback say by what factor it is off (e.g. L_out times too small)."""
    trap = named_trap(ctx, got, candidates)
    if trap is not None and right is not None and np.shape(got) == np.shape(right):
        raise ctx.mismatch(name, got, right, fn, counts=counts, trap=trap)  # says where, too
    if trap is not None:
        factor = ctx.factor_sentence(name, got, right, counts) if right is not None else None
        raise Fail(f"`{name}` from {fn} {what}. " + (f"{factor} " if factor else "")
                   + QUESTION.trap(trap).explanation, trap)


def sizes(x, dout) -> dict:
    """The sizes a wrong factor in a gradient may be, for the feedback."""
    return {"N, the batch size": x.shape[0], "L_out, the number of output positions": dout.shape[2],
            "N * L_out": x.shape[0] * dout.shape[2]}


def expect_value(ctx, name, got, expected, fn, candidates=()):
    """Like ``ctx.expect_array``, but a trap of another shape is named too."""
    if isinstance(got, np.ndarray) and got.shape != expected.shape:
        fail_if_trap(ctx, name, got, fn, candidates)
    try:
        ctx.expect_array(name, got, expected, fn)
    except Fail:
        fail_if_trap(ctx, name, got, fn, candidates, right=expected)
        raise


def expect_gradient(ctx, name, got, f, at, dout, candidates=(), right=None, counts=None, rows=False):
    """``got`` must be the gradient of <dout, f(at)>; else name the trap it matches, if any
    (``right`` and ``counts`` as in ``fail_if_trap``; ``rows`` as in ``ctx.expect_gradient``)."""
    if isinstance(got, np.ndarray) and got.shape != at.shape:
        fail_if_trap(ctx, name, got, BWD, candidates)
    try:
        ctx.expect_gradient(name, got, f, at, dout, BWD, reference=right, counts=counts, rows=rows)
    except Fail:
        fail_if_trap(ctx, name, got, BWD, candidates, what="does not match finite differences",
                     right=right, counts=counts)
        raise


def backward_case(ctx, n, c_in, c_out, length, k, stride, padding):
    """Inputs and a random dout for one case, and the learner's (dx, dw, db) for them."""
    x, w, b = conv_inputs(ctx.rng, n, c_in, c_out, length, k)
    dout = upstream(ctx.rng, ctx.ref.conv1d_forward(x, w, b, stride, padding).shape)
    grads = ctx.unpack(ctx.call(BWD, dout, x, w, stride, padding), 3, BWD, "dx, dw, db")
    return x, w, b, dout, grads


# -- checks ------------------------------------------------------------------------------
@QUESTION.check("conv1d forward: every stride (1-3) and padding (0-2)", points=2, hints=(
    "Window t starts at t * stride in the input padded with `padding` zeros at each end.",
    "It is a cross-correlation: tap k of the filter multiplies the input k places into the "
    "window, with no reversal; add the bias to every position.",
))
def forward_values(ctx):
    for cfg in forward_configs():
        s, p = cfg["stride"], cfg["padding"]
        x, w, b = conv_inputs(ctx.rng, cfg["n"], cfg["c_in"], cfg["c_out"], cfg["length"], cfg["k"])
        out = ctx.call(FWD, x, w, b, s, p)
        expect_value(ctx, "out", out, ctx.ref.conv1d_forward(x, w, b, s, p), FWD, [
            ("stride-ignored", ctx.ref.conv1d_forward(x, w, b, 1, p)),
            ("kernel-flip", ctx.ref.conv1d_forward(x, w[:, :, ::-1], b, s, p))])


@QUESTION.check("dx matches finite differences (stride, padding, an unread tail)", points=2, hints=(
    "Each input receives gradient from every window that read it, through the tap that read it.",
    "Work on the padded input, then drop the padding; inputs no window reads get zero.",
))
def backward_dx(ctx):
    for cfg in [dict(n=2, c_in=3, c_out=2, length=11, k=4, stride=2, padding=1),
                dict(n=3, c_in=2, c_out=3, length=12, k=4, stride=3, padding=0),
                dict(n=2, c_in=2, c_out=2, length=9, k=3, stride=1, padding=2)] + BOUNDARY:
        x, w, b, dout, (dx, _, _) = backward_case(ctx, **cfg)
        s, p = cfg["stride"], cfg["padding"]
        traps = [("kernel-flip", ctx.ref.conv1d_backward(dout, x, w[:, :, ::-1], s, p)[0])]
        if s > 1:
            traps.append(("stride-ignored", stride_one(ctx.ref, dout, x, w, p)[0]))
        expect_gradient(ctx, "dx", dx, lambda z: ctx.ref.conv1d_forward(z, w, b, s, p), x, dout, traps,
                        right=ctx.ref.conv1d_backward(dout, x, w, s, p)[0],
                        rows=True)  # each example of the batch is convolved on its own


@QUESTION.check("dw against finite differences (a batch, many positions)", points=2, hints=(
    "How many times is each filter weight used in one forward pass?",
    "Every use adds a term to the weight's gradient: sum over all output positions and the "
    "whole batch, never overwrite or average.",
))
def backward_dw(ctx):
    for cfg in [dict(n=3, c_in=2, c_out=2, length=13, k=3, stride=2, padding=1),
                dict(n=2, c_in=3, c_out=2, length=14, k=5, stride=3, padding=2)] + BOUNDARY[:3]:
        x, w, b, dout, (_, dw, _) = backward_case(ctx, **cfg)
        s, p = cfg["stride"], cfg["padding"]
        dw_traps, _ = param_traps(ctx.ref, dout, x, w, s, p)
        expect_gradient(ctx, "dw", dw, lambda z: ctx.ref.conv1d_forward(x, z, b, s, p), w, dout, dw_traps,
                        right=ctx.ref.conv1d_backward(dout, x, w, s, p)[1], counts=sizes(x, dout))


@QUESTION.check("db against finite differences (a batch, many positions)", points=1, hints=(
    "The bias of a channel is added to every output position of every example.",
    "db has one number per output channel.",
))
def backward_db(ctx):
    for cfg in [dict(n=3, c_in=2, c_out=3, length=12, k=3, stride=2, padding=1),
                dict(n=2, c_in=1, c_out=2, length=10, k=4, stride=3, padding=2)] + BOUNDARY[2:3]:
        x, w, b, dout, (_, _, db) = backward_case(ctx, **cfg)
        s, p = cfg["stride"], cfg["padding"]
        _, db_traps = param_traps(ctx.ref, dout, x, w, s, p)
        expect_gradient(ctx, "db", db, lambda z: ctx.ref.conv1d_forward(x, w, z, s, p), b, dout, db_traps,
                        right=ctx.ref.conv1d_backward(dout, x, w, s, p)[2], counts=sizes(x, dout))


@QUESTION.check("training: SGD with your backward recovers a planted filter", points=2, hints=(
    "If the loss falls a little and then stalls, the filter is learning from part of the data only.",
    "Each step must use the gradient summed over every window of every example.",
))
def training(ctx):
    c = TRAIN_SHAPE
    s, p = c["stride"], c["padding"]
    x, w_star, b_star = conv_inputs(ctx.rng, c["n"], c["c_in"], c["c_out"], c["length"], c["k"])
    y = ctx.ref.conv1d_forward(x, w_star, b_star, s, p)            # N, C_out, L_out
    lr = TRAIN_LR / y.shape[2]
    w, b = np.zeros_like(w_star), np.zeros_like(b_star)
    loss = lambda: 0.5 * float(np.sum((ctx.ref.conv1d_forward(x, w, b, s, p) - y) ** 2)) / c["n"]  # noqa: E731
    start, first = loss(), None
    with np.errstate(all="ignore"):
        for _ in range(TRAIN_STEPS):
            dout = (ctx.ref.conv1d_forward(x, w, b, s, p) - y) / c["n"]
            _, dw, db = ctx.unpack(ctx.call(BWD, dout, x, w, s, p), 3, BWD, "dx, dw, db")
            if first is None:  # keep step 0's gradients: a stalled run is named by them
                first, first_grads = param_traps(ctx.ref, dout, x, w, s, p), (dw, db)
                for name, got, at, candidates in (("dw", dw, w, first[0]), ("db", db, b, first[1])):
                    if isinstance(got, np.ndarray) and got.shape != at.shape:
                        fail_if_trap(ctx, name, got, BWD, candidates)
            w = w - lr * ctx.as_array("dw", dw, w, BWD)
            b = b - lr * ctx.as_array("db", db, b, BWD)
            now = loss()
            if not np.isfinite(now) or now > 1e6 * start:  # diverged: no need to go on
                break
        end = loss()
    if end <= TRAIN_FACTOR * start:
        return
    story = (f"Plain SGD with your conv1d_backward ({TRAIN_STEPS} steps from a zero filter, "
             f"lr {lr:.3g}) took the loss from {start:.3g} to {end:.3g}; with the right gradient it "
             f"falls below {TRAIN_FACTOR:g} times its start.")
    for name, got, candidates in (("dw", first_grads[0], first[0]), ("db", first_grads[1], first[1])):
        trap = named_trap(ctx, got, candidates)
        if trap is not None:
            raise Fail(f"{story} Your `{name}` at the first step was wrong. "
                       f"{QUESTION.trap(trap).explanation}", trap)
    raise Fail(story)


@QUESTION.check("inputs left unchanged", points=1, hints=(
    "Does either function assign into `x`, `w`, `b` or `dout` (padding in place, `+=` on an input)?",
))
def inputs_unchanged(ctx):
    x, w, b = conv_inputs(ctx.rng, 2, 2, 3, 9, 3)
    dout = upstream(ctx.rng, ctx.ref.conv1d_forward(x, w, b, 2, 1).shape)
    ctx.expect_inputs_unchanged([
        (FWD, (x, w, b, 2, 1), ["x", "w", "b"], ctx.ref.conv1d_forward(x, w, b, 2, 1)),
        (BWD, (dout, x, w, 2, 1), ["dout", "x", "w"], ctx.ref.conv1d_backward(dout, x, w, 2, 1))])
