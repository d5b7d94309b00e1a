"""Hidden checks for grad_accumulation: micro-batches whose gradients add up to the full batch's.

The model is question 05's MLP with params = (W1, b1, W2, b2); shapes x (N, D_in), y (N, D_out),
W1 (D_in, H), b1 (H,), W2 (H, D_out), b2 (D_out,); m = micro_batch, K = ceil(N / m) micro-batches.
``mlp_grads`` is checked against central differences of the reference's ``mlp_loss``;
``accumulated_grads`` against the reference's ``mlp_grads`` on the whole batch, tightly, and a
wrong answer is diagnosed by how it behaves: both in ``traps.py``; the inputs are in ``probes.py``.
Peak memory is measured once, on a batch whose hidden activations dwarf its inputs (N = 4096,
H = 256: one (N, H) float64 array is 8 MiB, the budget half of it; measured on the 2-core
reference machine, 3 runs each: the solution 0.8 to 1.0 MiB, the PyTorch answer 1.1 to 1.3 MiB,
a forward on the whole batch 17 MiB, mlp_grads on the whole batch 26 MiB).
Each trap has a runnable wrong answer in tests/answers/grad_accumulation/.
"""
from __future__ import annotations

import math

import numpy as np

from backprop_traps.grader.checks.grad_accumulation.probes import cancelling_rows, draw_params, draw_rows, kink_net, mask_grads
from backprop_traps.grader.checks.grad_accumulation.traps import ACC, GRADS, TRAPS, call_acc, expect_accumulated
from backprop_traps.grader.engine.memory_verdict import peak_of
from backprop_traps.grader.engine.question import Fail, Question

LOSS, GRAD, NOISE = "mlp_loss", "mlp_grads", "minibatch_noise"
ONE = np.float64(1.0)  # the loss is a scalar: no upstream gradient to contract with
MARGIN = 0.02          # |z| at least this where finite differences (1e-6 steps) are taken
MEM_N, MEM_D_IN, MEM_H, MEM_D_OUT, MEM_M = 4096, 16, 256, 8, 32
MEM_TAIL = 13                         # rows in the measured batch's shorter last micro-batch
MiB = 1024 * 1024
ACTIVATION = MEM_N * MEM_H * 8        # one (N, H) float64 array of the whole batch: 8 MiB
BUDGET = ACTIVATION // 2              # 64 micro-batch activations; the solution peaks near 1 MiB

QUESTION = Question("grad_accumulation", "Gradient accumulation: micro-batches that add up to the "
                    "full batch", traps=TRAPS, difficulty="medium",
                    kinks={"relu-at-0": "a hidden pre-activation z exactly 0 (the mask is z > 0)"},
                    memory_paths=("full micro-batches", "a shorter last micro-batch"),
                    measured_calls=1)  # one call has both paths (its last micro-batch is shorter)




# -- mlp_loss, mlp_grads -----------------------------------------------------------------------
@QUESTION.check("mlp_loss: the loss's value", points=1,
                hints=("Divide by the number of rows N, not by N times D_out.",
                       "z = x W1 + b1, h = relu(z), out = h W2 + b2; the bias is added to every row."))
def loss_values(ctx):
    for n, d_in, hidden, d_out in ((7, 4, 5, 3), (1, 3, 2, 2)):
        params = draw_params(ctx.rng, d_in, hidden, d_out)
        x, y = draw_rows(ctx.rng, params, n)
        got, want = ctx.call(LOSS, params, x, y), ctx.ref.mlp_loss(params, x, y)
        if isinstance(got, np.ndarray) and got.size == 1 and got.dtype.kind == "f":
            got = float(got.reshape(-1)[0])
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            raise Fail(f"{LOSS} must return the loss as one number (a Python float), not {type(got).__name__}")
        if not math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12):
            per_element = " (it looks divided by N * D_out, not by N)" if math.isclose(got * d_out, want) else ""
            raise Fail(f"{LOSS} returned {got:.6g}, expected {want:.6g} (N={n}, D_out={d_out}){per_element}.")


@QUESTION.check("mlp_grads: the gradient of the batch's mean loss (finite differences; z exactly 0)",
                points=2, kinks=("relu-at-0",), hints=(
    "It is question 05's backward for the four parameters, starting from dout = (out - y) / N.",
    "N is the number of rows you were given: on a micro-batch, that micro-batch's size.",
    "The ReLU passes gradient only where z > 0 in the forward pass.",
))
def batch_gradient(ctx):
    for n, d_in, hidden, d_out in ((6, 4, 5, 3), (1, 3, 4, 2)):
        params = draw_params(ctx.rng, d_in, hidden, d_out)
        x, y = draw_rows(ctx.rng, params, n, margin=MARGIN)
        got = ctx.unpack(ctx.call(GRAD, params, x, y), 4, GRAD, ", ".join(GRADS))
        for i, name in enumerate(GRADS):
            def loss_of(value, i=i):
                changed = list(params)
                changed[i] = value
                return ctx.ref.mlp_loss(tuple(changed), x, y)
            g = ctx.expect_gradient(name, got[i], loss_of, params[i], ONE, GRAD,
                                    counts={"N, the number of rows": n, "D_out": d_out})
            wants = QUESTION.contract_dtype(GRAD, name)
            if g.dtype != np.dtype(wants):
                raise Fail(f"`{name}` from {GRAD} is {g.dtype}; the contract says {wants}.")
    # the ReLU's kink: pre-activations exactly 0 (exact arithmetic); no finite differences at a
    # kink, the reference's own gradient; a mask z >= 0 explains the whole answer or is not named
    params, x, y = kink_net(ctx.rng)
    got = ctx.unpack(ctx.call(GRAD, params, x, y), 4, GRAD, ", ".join(GRADS))
    want, inclusive = ctx.ref.mlp_grads(params, x, y), mask_grads(params, x, y, inclusive=True)
    got = [ctx.as_array(name, g, w, GRAD) for name, g, w in zip(GRADS, got, want)]
    if all(ctx.close(g, w) for g, w in zip(got, want)):
        return
    at = "On a batch whose pre-activations z are exactly 0 in places (N=6, exact halves)"
    i = next(k for k, (g, w) in enumerate(zip(got, want)) if not ctx.close(g, w))
    located = ctx.locate(GRADS[i], got[i], want[i])
    where = f"\n{located}" if located else ""
    if all(ctx.close(g, w) for g, w in zip(got, inclusive)):
        raise Fail(f"{at}, your gradient is what a ReLU mask of z >= 0 gives. "
                   f"{QUESTION.trap('relu-mask-at-zero').explanation}{where}", "relu-mask-at-zero")
    raise Fail(f"{at}, `{GRADS[i]}` from {GRAD} differs from the gradient (the ReLU's derivative at 0 is "
               f"0).{where}")


# -- accumulated_grads ---------------------------------------------------------------------
@QUESTION.check("accumulated_grads: micro-batches that divide the batch", points=2, hints=(
    "The loss is a mean over all N rows: how does it split into the micro-batches' own mean losses?",
    "Each micro-batch's mean gradient counts with weight n_k / N.",
    "Zero the buffers once, before the loop, and add into them inside it.",
))
def even_split(ctx):
    for d_in, hidden, d_out in ((4, 6, 3), (3, 5, 2)):
        m = int(ctx.rng.integers(2, 7))
        k = int(ctx.rng.choice([j for j in range(2, 7) if j != m]))  # K != m: two traps stay apart
        params = draw_params(ctx.rng, d_in, hidden, d_out)
        x, y = draw_rows(ctx.rng, params, k * m)
        expect_accumulated(ctx, params, x, y, m)


@QUESTION.check("accumulated_grads: an uneven last micro-batch", points=2, hints=(
    "With 10 rows in micro-batches of 4, the last one has 2 rows: how much of the full batch's loss is it?",
    "Averaging the micro-batches' mean gradients gives the short last one as much weight as a full one.",
    "Weight each micro-batch by its own number of rows over N.",
))
def uneven_split(ctx):
    rng = ctx.rng
    cases = [(int(rng.integers(3, 7)), int(rng.integers(1, 4)), 1),    # a last micro-batch of one row
             (int(rng.integers(4, 8)), int(rng.integers(2, 4)), None)]  # any shorter last one
    for m, full, tail in cases:
        tail = tail or int(rng.integers(2, m))
        params = draw_params(rng, 4, 6, 3)
        x, y = draw_rows(rng, params, full * m + tail)
        expect_accumulated(ctx, params, x, y, m)
    params = draw_params(rng, 3, 5, 2)
    x, y = draw_rows(rng, params, 9)
    expect_accumulated(ctx, params, x, y, 8)                              # 8 rows, then 1


@QUESTION.check("accumulated_grads: micro_batch = 1, micro_batch >= N, and N = 1", points=1, hints=(
    "With micro_batch = 1 every row is its own micro-batch; with micro_batch >= N there is one.",
    "Stepping through the rows in strides of micro_batch, and slicing past the end of an array, "
    "both behave well in numpy: no special case is needed.",
))
def edges(ctx):
    params = draw_params(ctx.rng, 3, 4, 2)
    x, y = draw_rows(ctx.rng, params, 7)
    for m in (1, 7, 7 + int(ctx.rng.integers(1, 20))):
        expect_accumulated(ctx, params, x, y, m)
    x, y = draw_rows(ctx.rng, params, 1)
    for m in (1, 3):
        expect_accumulated(ctx, params, x, y, m)


@QUESTION.check("accumulated_grads: float64 buffers (micro-batches whose gradients cancel)", points=2, hints=(
    "Here the micro-batches' gradients are about 1e6 and cancel to about 1: how precise is a float32 "
    "partial sum of 1e6?",
    "Create the buffers as float64 and return float64 arrays.",
))
def float64_buffers(ctx):
    params = draw_params(ctx.rng, 4, 6, 3)
    m = int(ctx.rng.choice([4, 5, 7, 8]))  # K = 6 micro-batches: K != m keeps two traps apart
    x, y = cancelling_rows(ctx.rng, params, m, pairs=3)
    expect_accumulated(ctx, params, x, y, m)
    x, y = cancelling_rows(ctx.rng, params, m, pairs=2, tail=int(ctx.rng.integers(1, m)))
    expect_accumulated(ctx, params, x, y, m)


@QUESTION.check("accumulated_grads: nothing kept from one call to the next", points=1, hints=(
    "Call your function twice in a row with the same arguments: do you get the same answer?",
    "Buffers created at module level, as default arguments or as attributes outlive the call.",
))
def no_state(ctx):
    params = draw_params(ctx.rng, 3, 5, 2)
    (xa, ya), (xb, yb) = draw_rows(ctx.rng, params, 10), draw_rows(ctx.rng, params, 10)
    for x, y in ((xa, ya), (xa, ya), (xb, yb)):
        expect_accumulated(ctx, params, x, y, 4)
    other = draw_params(ctx.rng, 4, 3, 3)
    x, y = draw_rows(ctx.rng, other, 6)
    expect_accumulated(ctx, other, x, y, 6)


@QUESTION.check(f"accumulated_grads: peak memory (N={MEM_N + MEM_TAIL}, "
                f"micro_batch={MEM_M}, a last one of {MEM_TAIL})", points=2,
                memory=("full micro-batches", "a shorter last micro-batch"), hints=(
    "Which arrays of your function have N rows? Only x and y should.",
    "Slices of x and y are views: they cost nothing. The hidden activations of the whole batch do.",
    "Add each micro-batch's gradient into the buffers as soon as it is computed; keep no list of them.",
))
def memory(ctx):
    """One measured call on a batch with a shorter last micro-batch: both code paths of the
    promise. Over budget, a second call on half the batch tells how the peak grows: with the
    number of micro-batches (gradients or activations kept) or not."""
    params = draw_params(ctx.rng, MEM_D_IN, MEM_H, MEM_D_OUT)
    n = MEM_N + MEM_TAIL
    x, y = draw_rows(ctx.rng, params, n)
    peak = measured_peak(ctx, params, x, y)
    if peak <= BUDGET:
        return
    over = (f"With N={n} rows, H={MEM_H} hidden units and micro_batch={MEM_M}, your call peaked at "
            f"{peak / MiB:.1f} MiB above its inputs, over the budget of {BUDGET / MiB:.0f} MiB (half of "
            f"one (N, H) float64 array of the whole batch, {ACTIVATION / MiB:.0f} MiB; one micro-batch's "
            f"is {MEM_M * MEM_H * 8 // 1024} KiB).")
    if peak >= ACTIVATION:
        raise Fail(f"{over} That is {peak / ACTIVATION:.1f} whole-batch activations. "
                   f"{QUESTION.trap('full-batch-at-once').explanation}", "full-batch-at-once")
    half = n // 2
    try:
        smaller = measured_peak(ctx, params, x[:half], y[:half])
    except Fail:
        smaller = None
    if smaller is not None and peak - smaller >= 0.25 * peak:
        k, k_half = math.ceil(n / MEM_M), math.ceil(half / MEM_M)
        raise Fail(f"{over} On half the batch ({k_half} micro-batches instead of {k}) it peaked at "
                   f"{smaller / MiB:.1f} MiB: your peak grows with the number of micro-batches. "
                   f"{QUESTION.trap('full-batch-at-once').explanation}", "full-batch-at-once")
    raise Fail(f"{over} It does not grow with the number of micro-batches (half the batch peaks about "
               "as high), so look for large arrays inside one micro-batch's step.")


def measured_peak(ctx, params, x, y) -> int:
    """The learner's accumulated_grads on (x, y), right values first, then its measured peak."""
    got, result = call_acc(ctx, params, x, y, MEM_M, memory=True)
    try:
        expect_accumulated(ctx, params, x, y, MEM_M, got=got)
    except Fail as fail:
        raise Fail(fail.feedback + " Memory is judged once the gradient is right.", fail.trap) from None
    return peak_of(result)


# -- minibatch_noise: sigma^2 / B (issue 50 item 7) ---------------------------------------------
@QUESTION.check("minibatch_noise: the variance of a random minibatch's gradient", points=2, hints=(
    "A minibatch's gradient is the mean of B rows' own gradients, each drawn independently.",
    "What is the variance of one drawn row's gradient, and of a mean of B such draws?",
))
def noise(ctx):
    for n, batch in ((9, 4), (12, 5), (7, 1)):
        params = draw_params(ctx.rng, 3, 4, 2)
        x, y = draw_rows(ctx.rng, params, n, margin=MARGIN)
        got = ctx.unpack(ctx.call(NOISE, params, x, y, batch), 4, NOISE, ", ".join(f"v{g[1:]}" for g in GRADS))
        want = ctx.ref.minibatch_noise(params, x, y, batch)
        for i, name in enumerate(GRADS):
            traps = {"noise-divided-twice": want[i] / batch, "bessel-corrected": want[i] * n / (n - 1)}
            if batch > 1:
                traps["noise-not-divided-by-batch"] = want[i] * batch
            ctx.expect_array(f"v{name[1:]}", got[i], want[i], NOISE, traps=traps,
                             counts={"N, the number of rows": n, "B": batch}, atol=1e-14)


@QUESTION.check("inputs left unchanged", points=1, hints=(
    "Does any of your functions change params, x or y in place (+=, *=, slices assigned)?",
    "x[a:b] is a view: writing into it writes into x.",
))
def inputs_unchanged(ctx):
    params = draw_params(ctx.rng, 3, 4, 2)
    x, y = draw_rows(ctx.rng, params, 7)
    names = ["params", "x", "y"]
    ctx.expect_inputs_unchanged([
        (LOSS, (params, x, y), names, ctx.ref.mlp_loss(params, x, y)),
        (GRAD, (params, x, y), names, ctx.ref.mlp_grads(params, x, y)),
        (ACC, (params, x, y, 3), names, ctx.ref.mlp_grads(params, x, y)),
        (NOISE, (params, x, y, 2), names, ctx.ref.minibatch_noise(params, x, y, 2))])
