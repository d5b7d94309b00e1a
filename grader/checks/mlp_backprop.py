"""Hidden checks for mlp_backprop: a two-layer MLP, forward and backward by hand.

The checks call the learner's backward with the reference's own z and h, compare each of
dx, dW1, db1, dW2, db2 with central differences of the reference forward, and name the
classic slips: a missing transpose, a bias gradient that is not a batch sum, the ReLU mask
taken from the wrong array, a weight gradient built from the wrong activation.
Shapes: x (N, D_in), W1 (D_in, H), b1 (H,), W2 (H, D_out), b2 (D_out,), z, h (N, H),
out, y, dout (N, D_out). Most checks use four different sizes, so a wrong product breaks
the shapes; one uses square layers, where it does not. The reference is the solution
notebook (``ctx.ref``); the known-wrong variants below are the traps, computed here on the
same inputs so a wrong answer can be named, even when its shape is off (dW transposed, db
not reduced). Each trap has a runnable wrong answer in tests/answers/mlp_backprop/.
The ReLU's boundary: the first-layer and dx checks also run a net of halves (exact
arithmetic) whose z is exactly 0 in places, compared with the reference's own gradients
(finite differences are not valid at a kink); a mask taken as z >= 0 is relu-mask-wrong.
"""
from __future__ import annotations

import math

import numpy as np

from backprop_traps.grader.engine.gradcheck import upstream
from backprop_traps.grader.engine.question import Fail, Question, Trap

FWD, LOSS, BWD = "mlp_forward", "mse_loss", "mlp_backward"
GRADS = ("dx", "dW1", "db1", "dW2", "db2")  # the backward's answer, in order
PARAMS = ("x", "W1", "b1", "W2", "b2")      # what each gradient is taken with respect to
ONE = np.float64(1.0)  # the loss is the output itself: no upstream gradient to contract with
SHAPE_ERRORS = ("matmul: Input operand", "not aligned")  # numpy's words for a product that does not fit
MARGIN = 0.02  # |z| at least this: finite differences (1e-6 steps) never cross the ReLU's kink

QUESTION = Question("mlp_backprop", "Two-layer MLP: forward and backward by hand", traps=[
    Trap("no-transpose", "A transpose is missing. The signal goes back through the transpose "
         "of each weight (dout times W2 transposed, then dz times W1 transposed), and a weight's "
         "gradient is the saved input transposed times the upstream gradient, so that it has the "
         "weight's own shape (H, D_out) for W2, not (D_out, H). Write each product out with its "
         "shapes and check that the inner sizes meet."),
    Trap("bias-not-summed", "A bias gradient is not the sum over the batch. The forward adds the "
         "same bias to every row, so its gradient is the sum of the upstream gradient's rows: not "
         "their mean (the 1 / N is already inside dout), not the first row, not the unreduced "
         "(N, ...) array. Sum over axis 0."),
    Trap("relu-mask-wrong", "The ReLU's backward uses the wrong mask. A hidden unit passes "
         "gradient back only where it was on in the forward pass: multiply dh by the 0/1 mask "
         "z > 0 saved from the forward (equivalently h > 0). Not by the sign of dh itself, of x "
         "or of an output, not by the values of h, and not by nothing at all."),
    Trap("activation-not-saved", "A weight gradient is built from the wrong activation. Each "
         "layer's weight gradient uses that layer's own input as saved in the forward pass: dW2 "
         "from h (after the ReLU, not z), dW1 from x (not h or z)."),
], difficulty="easy", kinks={"relu-at-0": "a hidden pre-activation z exactly 0 (the mask is z > 0)"})


# -- input generators ------------------------------------------------------------------
def network(rng, n, d_in, hidden, d_out):
    """(x, W1, b1, W2, b2), scaled so z and out are O(1), with every |z| >= MARGIN and
    both signs in z (when it has two entries or more; a single z is positive)."""
    for _ in range(100):
        W1 = rng.standard_normal((d_in, hidden)) / math.sqrt(d_in)
        b1 = 0.3 * rng.standard_normal(hidden)
        W2 = rng.standard_normal((hidden, d_out)) / math.sqrt(hidden)
        b2 = 0.3 * rng.standard_normal(d_out)
        x = rng.standard_normal((n, d_in))
        for _ in range(100):  # redraw the rows that come near the kink
            near = np.min(np.abs(x @ W1 + b1), axis=1) < MARGIN
            if not near.any():
                break
            x[near] = rng.standard_normal((int(near.sum()), d_in))
        z = x @ W1 + b1
        if np.min(np.abs(z)) >= MARGIN and (z.max() > 0 if z.size == 1 else z.min() < 0 < z.max()):
            return x, W1, b1, W2, b2
    raise RuntimeError("no usable network drawn")  # never with the sizes used here


def exact_zeros(rng, n, d_in, hidden, d_out):
    """(x, W1, b1, W2, b2) of halves in [-1, 1]: every product and sum is exact in float64, so
    some pre-activations z are exactly 0, the ReLU's boundary, where its derivative is 0 (the
    mask is z > 0). Finite differences are not valid at a kink: these inputs are compared with
    the reference's own gradients. Redrawn until a zero sits where the gradient arriving at
    it is not 0, so a mask taken as z >= 0 changes db1 and dx."""
    half = lambda shape: rng.integers(-2, 3, size=shape) / 2.0  # noqa: E731
    for _ in range(200):
        x, W1, b1 = half((n, d_in)), half((d_in, hidden)), half(hidden)
        W2, b2 = half((hidden, d_out)), half(d_out)
        z = x @ W1 + b1
        if (z == 0).any() and (z > 0).any() and np.abs(W2[np.nonzero(z == 0)[1]]).sum() > 0:
            return x, W1, b1, W2, b2
    raise RuntimeError("no network with an exact zero drawn")  # never with the sizes used here


def where(net) -> str:
    x, W1, _, W2, _ = net
    return f"N={x.shape[0]}, D_in={x.shape[1]}, H={W1.shape[1]}, D_out={W2.shape[1]}"


# -- the known-wrong variants (traps) ---------------------------------------------------
def inside_gradients(ctx, dout, z, h, W2):
    """(dh, dz) read off the reference's backward, never derived here: with x = I (N x N),
    dW1 = x.T @ dz is dz itself; with every unit on (z > 0 everywhere), dz is dh."""
    n, hidden = z.shape
    eye, unused_W1 = np.eye(n), np.zeros((n, hidden))
    dz = ctx.ref.mlp_backward(dout, eye, z, h, unused_W1, W2)[1]
    dh = ctx.ref.mlp_backward(dout, eye, np.ones_like(z), h, unused_W1, W2)[1]
    return dh, dz


def first_layer_from(ctx, dz, x, W1):
    """(dx, dW1, db1) for a given dz, by the reference: a second layer W2 = I with every unit
    on hands dz to the first layer unchanged."""
    dx, dW1, db1, _, _ = ctx.ref.mlp_backward(dz, x, np.ones_like(dz), np.zeros_like(dz), W1,
                                              np.eye(dz.shape[1]))
    return dx, dW1, db1


def wrong_gradients(ctx, dout, x, z, h, W1, W2) -> dict[str, list]:
    """For each gradient, (trap, wrong value) pairs. A value may have another shape than the
    right answer (dW transposed, db not reduced); the products that only exist when two sizes
    are equal (dout @ W2 needs D_out = H) are added only then."""
    wrong = {g: [] for g in GRADS}
    dh, dz = inside_gradients(ctx, dout, z, h, W2)

    def through_first_layer(trap, dz_wrong):
        """What a wrong dz does downstream: dW1, db1 and dx all inherit it."""
        dx, dW1, db1 = first_layer_from(ctx, dz_wrong, x, W1)
        wrong["dW1"].append((trap, dW1))
        wrong["db1"].append((trap, db1))
        wrong["dx"].append((trap, dx))
        if dz_wrong.shape[1] == W1.shape[0]:  # square W1: dx through W1 instead of W1^T too
            wrong["dx"].append((trap, dz_wrong @ W1))

    # no-transpose: dW = upstream^T @ input; the signal through W instead of W^T
    wrong["dW2"].append(("no-transpose", dout.T @ h))
    wrong["dW1"].append(("no-transpose", dz.T @ x))
    if dz.shape[1] == W1.shape[0]:
        wrong["dx"].append(("no-transpose", dz @ W1))
    if dout.shape[1] == W2.shape[0]:
        through_first_layer("no-transpose", (dout @ W2) * (z > 0))
    # bias-not-summed: a mean, the first row, the unreduced array, the sum over features
    for name, g in (("db2", dout), ("db1", dz)):
        wrong[name] += [("bias-not-summed", v) for v in (g.mean(axis=0), g[0], g, g.sum(axis=1))]
    # relu-mask-wrong: gated by the sign of dh, by nothing, by h's values, by x's or dout's sign
    gates = [dh > 0, np.ones_like(dh), h]
    gates += [g > 0 for g in (x, dout) if g.shape == dh.shape]
    if (z == 0).any():  # exact zeros: the mask z >= 0 lets the gradient through where relu'(0) = 0
        gates.append(z >= 0)
    for gate in gates:
        through_first_layer("relu-mask-wrong", dh * gate)
    # activation-not-saved: dW2 from z (or x), dW1 from h (or z)
    wrong["dW2"] += [("activation-not-saved", a.T @ dout) for a in (z, x)]
    wrong["dW1"] += [("activation-not-saved", a.T @ dz) for a in (h, z)]
    return wrong


def first_match(ctx, got, pairs):
    """The trap of the first wrong value that ``got`` equals (same shape), if any."""
    for trap, value in pairs:
        if isinstance(got, np.ndarray) and got.shape == value.shape and ctx.close(got, value):
            return trap
    return None


# -- the example for the feedback: the smallest network where the answer is still wrong ----
def backward_example(ctx, index, square=False):
    """The smallest network (square ones for the square check) where GRADS[index] is wrong."""
    def build(rng, size):
        net = network(rng, *size)
        x, W1, _, W2, _ = net
        out, h, z = ctx.ref.mlp_forward(*net)
        dout = rng.integers(-3, 4, size=out.shape).astype(np.float64)
        args = {"dout": dout, "x": x, "z": z, "h": h, "W1": W1, "W2": W2}
        return args
    sizes = [(1, 2, 2, 2), (2, 3, 3, 3)] if square else [(1, 2, 3, 1), (2, 3, 4, 2), (3, 2, 4, 3)]
    return lambda: ctx.smallest_failure(
        BWD, build, sizes, lambda *a: ctx.ref.mlp_backward(*a)[index],
        pick=lambda v: v[index], name=GRADS[index])


# -- checks' building blocks ----------------------------------------------------------------
def forward_of(ctx, net, index):
    """out as a function of one of x, W1, b1, W2, b2 (the others fixed), by the reference."""
    def f(value):
        args = list(net)
        args[index] = value
        return ctx.ref.mlp_forward(*args)[0]
    return f


def expect_grad(ctx, net, dout, got, wrong, name, example=True):
    """One gradient: named by its trap even when its shape is off, else finite differences."""
    i = GRADS.index(name)
    wrt, context = net[i], where(net)
    square = net[1].shape[0] == net[1].shape[1] == net[3].shape[1]
    if isinstance(got, np.ndarray) and got.shape != wrt.shape:
        trap = first_match(ctx, got, wrong[name])
        if trap is not None:
            raise Fail(f"`{name}` from {BWD} has shape {got.shape}, but {PARAMS[i]} has shape "
                       f"{wrt.shape} ({context}). {QUESTION.trap(trap).explanation}", trap)
    try:
        ctx.expect_gradient(name, got, forward_of(ctx, net, i), wrt, dout, BWD,
                            example=backward_example(ctx, i, square) if example else None)
    except Fail as failure:
        trap = first_match(ctx, got, wrong[name]) if failure.trap is None else None
        if trap is None:
            raise
        details = failure.feedback.partition("\n")[2]  # where it differs, the small example
        x, W1, _, W2, _ = net
        _, h, z = ctx.ref.mlp_forward(*net)
        right = ctx.ref.mlp_backward(dout, x, z, h, W1, W2)[i]
        factor = ctx.factor_sentence(name, got, right, {"N, the batch size": x.shape[0]})
        raise Fail(f"`{name}` from {BWD} does not match finite differences ({context}). "
                   + (f"{factor} " if factor else "")
                   + QUESTION.trap(trap).explanation + (f"\n{details}" if details else ""),
                   trap) from None


def expect_exact(ctx, net, dout, got, wrong, name):
    """One gradient at inputs with exact zeros in z: against the reference's own gradient."""
    x, W1, _, W2, _ = net
    i = GRADS.index(name)
    _, h, z = ctx.ref.mlp_forward(*net)
    right = ctx.ref.mlp_backward(dout, x, z, h, W1, W2)[i]
    traps: dict = {}
    for trap, value in wrong[name]:
        traps.setdefault(trap, []).append(value)
    trap = ctx.match_trap(got, traps) if isinstance(got, np.ndarray) else None
    if trap is not None and got.shape != right.shape:
        raise Fail(f"`{name}` from {BWD} has shape {got.shape}, but {PARAMS[i]} has shape "
                   f"{net[i].shape} ({where(net)}). {QUESTION.trap(trap).explanation}", trap)
    got = ctx.as_array(name, got, right, BWD)
    if ctx.close(got, right):
        return
    dh, _ = inside_gradients(ctx, dout, z, h, W2)
    if i < 3 and ctx.close(got, first_layer_from(ctx, dh * (z >= 0), x, W1)[i]):
        raise Fail(f"`{name}` from {BWD} is wrong only because of the pre-activations that are exactly "
                   f"0 ({int((z == 0).sum())} of them, {where(net)}): your mask lets the gradient "
                   "through there, as if it were z >= 0, but the ReLU's derivative at 0 is 0 (as in "
                   f"PyTorch). {QUESTION.trap('relu-mask-wrong').explanation}", "relu-mask-wrong")
    zero_units = (z == 0).any(axis=0)                                        # H
    regions = {"dx": {"in the rows (examples) that have a z exactly 0": np.broadcast_to(
                   (z == 0).any(axis=1, keepdims=True), right.shape)},
               "dW1": {"in the columns of hidden units with a z exactly 0": np.broadcast_to(
                   zero_units, right.shape)},
               "db1": {"at hidden units with a z exactly 0": zero_units}}.get(name)
    raise ctx.mismatch(name, got, right, BWD, traps, regions=regions)


def check_backward(ctx, net, names=GRADS, example=True, exact=False):
    """Call the learner's backward with the reference's z and h; check the gradients ``names``
    in backprop order (the second layer first); ``exact``: against the reference's gradients
    (inputs with exact zeros in z, see ``exact_zeros``), not finite differences."""
    x, W1, _, W2, _ = net
    out, h, z = ctx.ref.mlp_forward(*net)
    dout = upstream(ctx.rng, out.shape)
    try:
        got = ctx.unpack(ctx.call(BWD, dout, x, z, h, W1, W2), 5, BWD, ", ".join(GRADS))
    except Fail as failure:
        if failure.trap is None and any(s in failure.feedback for s in SHAPE_ERRORS):
            raise Fail(f"{failure.feedback}\nWith these sizes ({where(net)}) a product whose "
                       "inner sizes do not meet usually means a missing transpose: write each "
                       "product with its shapes.") from None
        raise
    wrong = wrong_gradients(ctx, dout, x, z, h, W1, W2)
    for name in ("dW2", "db2", "dW1", "db1", "dx"):
        if name in names and exact:
            expect_exact(ctx, net, dout, got[GRADS.index(name)], wrong, name)
        elif name in names:
            expect_grad(ctx, net, dout, got[GRADS.index(name)], wrong, name, example)


# -- checks ------------------------------------------------------------------------------
@QUESTION.check("forward: z = x W1 + b1, h = relu(z), out = h W2 + b2", points=2, hints=(
    "Each row of x goes through the same two layers: the bias is added to every row.",
    "Return three arrays in the order (out, h, z): the output, the activation after the ReLU, "
    "and the pre-activation before it.",
    "z and h are (N, H), out is (N, D_out); the ReLU keeps positive entries and zeroes the rest.",
))
def forward_values(ctx):
    for size in ((6, 4, 7, 3), (1, 3, 2, 5)):
        net = network(ctx.rng, *size)
        got = ctx.unpack(ctx.call(FWD, *net), 3, FWD, "out, h, z")
        out, h, z = ctx.ref.mlp_forward(*net)
        if all(isinstance(g, np.ndarray) and g.shape == h.shape for g in got[1:]) \
                and ctx.close(got[1], z) and ctx.close(got[2], h) and not ctx.close(h, z):
            raise Fail(f"{FWD} returned (out, z, h); the order is (out, h, z): the activation "
                       "after the ReLU, then the pre-activation before it.")
        for name, g, expected in (("out", got[0], out), ("h", got[1], h), ("z", got[2], z)):
            ctx.expect_array(name, g, expected, FWD)


@QUESTION.check("mse_loss: the loss and dout = (out - y) / N", points=1, hints=(
    "The loss is half the sum of squared errors divided by the number of rows N, not by "
    "N times D_out.",
    "Its gradient with respect to out is (out - y) / N: the 1/2 cancels the square's 2.",
))
def loss_values(ctx):
    for n, d in ((6, 3), (1, 4)):
        out, y = ctx.rng.standard_normal((n, d)), ctx.rng.standard_normal((n, d))
        loss, dout = ctx.unpack(ctx.call(LOSS, out, y), 2, LOSS, "loss, dout")
        expected = float(ctx.ref.mse_loss(out, y)[0])
        if isinstance(loss, np.ndarray) and loss.size == 1 and loss.dtype.kind == "f":
            loss = float(loss.reshape(-1)[0])
        if not isinstance(loss, (int, float)) or isinstance(loss, bool):
            raise Fail(f"{LOSS} must return the loss as one number (a Python float), "
                       f"not {type(loss).__name__}")
        if not ctx.close(loss, expected):
            per_element = (" (it looks divided by N * D_out, not by N)"
                           if ctx.close(loss * d, expected) else "")
            raise Fail(f"the loss from {LOSS} is {loss:.6g}, expected {expected:.6g} "
                       f"(N={n}, D_out={d}){per_element}.")
        ctx.expect_gradient("dout", dout, lambda o: ctx.ref.mse_loss(o, y)[0], out, ONE, LOSS)


@QUESTION.check("second layer: dW2 and db2", points=2, hints=(
    "W2 touches every row of the batch: its gradient adds up one contribution per row.",
    "dW2 has W2's shape (H, D_out). Which array that was multiplied by W2 in the forward pass, "
    "and which gradient, combine into that shape?",
    "b2 was added to every row, so db2 collects the upstream gradient of every row.",
))
def second_layer(ctx):
    check_backward(ctx, network(ctx.rng, 6, 4, 7, 3), names=("dW2", "db2"))


@QUESTION.check("first layer, through the ReLU: dW1 and db1", points=2, kinks=("relu-at-0",), hints=(
    "Going back through out = h W2, which matrix takes a (N, D_out) gradient to (N, H)?",
    "A hidden unit that was off in the forward pass (z <= 0) passes no gradient back, "
    "whatever gradient arrives at it.",
    "Then the first layer is the second one again, with x as its input and dz as its upstream "
    "gradient.",
))
def first_layer(ctx):
    check_backward(ctx, network(ctx.rng, 6, 4, 7, 3), names=("dW1", "db1"))
    check_backward(ctx, exact_zeros(ctx.rng, 6, 4, 7, 3), names=("dW1", "db1"), exact=True)


@QUESTION.check("dx, the input's gradient", points=1, hints=(
    "dx has x's shape (N, D_in) and comes from dz, the gradient at the first layer's output.",
    "Back through z = x W1 the gradient is multiplied by W1 transposed.",
))
def input_gradient(ctx):
    check_backward(ctx, network(ctx.rng, 6, 4, 7, 3), names=("dx",))
    check_backward(ctx, exact_zeros(ctx.rng, 6, 4, 7, 3), names=("dx",), exact=True)


@QUESTION.check("square layers (D_in = H = D_out): no shape error to catch a slip", points=2, hints=(
    "With square weights every product has the right shape, right or wrong: only the numbers tell.",
    "Write one entry of each gradient as a sum over indices, then check that your code "
    "computes that sum and not the one with two indices swapped.",
    "Run your backward on a non-square network: a missing transpose then fails loudly.",
))
def square_layers(ctx):
    check_backward(ctx, network(ctx.rng, 5, 4, 4, 4))


@QUESTION.check("a batch of 64 and edge sizes (N = 1, H = 1, D_out = 1)", points=1, hints=(
    "Do your sums keep working when a dimension is 1? A sum over the batch of one row is that row.",
    "Avoid squeeze and 1-D shortcuts: keep every array 2-D, and sum the biases over axis 0.",
))
def batch_and_edges(ctx):
    for size in ((64, 10, 16, 4), (1, 3, 4, 2), (5, 3, 1, 2), (4, 2, 3, 1)):
        check_backward(ctx, network(ctx.rng, *size), example=False)


@QUESTION.check("inputs left unchanged", points=1, hints=(
    "Does any of your functions change x, z, h, dout, a weight or a bias in place "
    "(+=, *=, z[z < 0] = 0)?",
    "Build results in new arrays (np.maximum, *, @ all return new ones), or copy first.",
))
def inputs_unchanged(ctx):
    net = network(ctx.rng, 4, 3, 5, 2)
    x, W1, b1, W2, b2 = net
    out, h, z = ctx.ref.mlp_forward(*net)
    dout = upstream(ctx.rng, out.shape)
    y = ctx.rng.standard_normal(out.shape)
    ctx.expect_inputs_unchanged([
        (FWD, net, list(PARAMS), ctx.ref.mlp_forward(*net)),
        (LOSS, (out, y), ["out", "y"], ctx.ref.mse_loss(out, y)),
        (BWD, (dout, x, z, h, W1, W2), ["dout", "x", "z", "h", "W1", "W2"],
         ctx.ref.mlp_backward(dout, x, z, h, W1, W2))])
