"""Hidden checks for custom_function: a custom autograd Function on a small tape engine,
backward() against the functional grad(), and double backward.

The engine, and the ``grader_*`` calls every check goes through, are the solution's setup cell;
the grader runs its own copy of it after the learner's code (``grader_setup``), so nothing the
learner edits there is graded. Expected answers are the same calls on the reference (``ctx.ref``);
the Hessian-vector product is also compared with central differences of the reference's
gradient. Shapes: everything is elementwise; Square and RoundSTE take a tensor of any shape,
the graphs' leaves are (3,), (4,), (2, 3) or (1,); the loss of the second-order checks takes x (n,).
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.checks.custom_function import probes, traps
from backprop_traps.grader.checks.custom_function.probes import (BWD, FN, GRAD, GRADIENT, HVP, REC, SECOND,
                                                                 TEMPLATES, TINY, drive, flat_state,
                                                                 graph_problem, state_of)
from backprop_traps.grader.engine import gradcheck
from backprop_traps.grader.engine.gradcheck import upstream
from backprop_traps.grader.engine.question import Fail, Question

QUESTION = Question("custom_function", "A custom autograd Function, backward() against grad(), "
                    "double backward", traps=traps.TRAPS, difficulty="hard", grader_setup=True,
                    kinks={"round-half": "an input exactly halfway between two integers (it rounds "
                                         "to the even one)"})


# -- comparing ------------------------------------------------------------------------------
def triple(ctx, value, fn: str, names: str):
    return ctx.unpack(value, len(names.split(", ")), fn, names)


def example(ctx, driver, args_of, pick, name, sizes=(1, 2, 4)):
    """The smallest elementwise input where the learner's answer is still wrong (as text)."""
    def build(rng, size):
        args = args_of(rng, size)
        return args, {k: v for k, v in args.items() if k != "name"}
    text = ctx.smallest_failure(driver, build, sizes, lambda *a: pick(getattr(ctx.ref, driver)(*a)),
                                pick=pick, name=name)
    return text and text.replace(f"{driver}()", probes.SAYS[driver].format(name=""))


def graph_example(ctx, driver, extra, pick, name):
    """The smallest graph (``probes.TINY``) where the learner's answer is still wrong."""
    def build(rng, size):
        graph, leaves, requires, g = graph_problem(rng, TINY[size])
        args = {"graph": graph, "leaves": leaves, "requires": requires, "grad_output": g, **extra(leaves, requires)}
        return args, probes.shown(graph, leaves, requires, g)
    return ctx.smallest_failure(driver, build, range(len(TINY)),
                                lambda *a: pick(getattr(ctx.ref, driver)(*a)), pick=pick, name=name)


def slot_name(k: int, leaves: int) -> str:
    return f"x{k}" if k < leaves else f"the tensor of node {k - leaves} (not a leaf)"


def expect_state(ctx, got, want, leaves: int, fn: str, where: str, traps_=None, example_=None):
    """Every slot's .grad after the call: None where the reference's is None, else its values;
    a wrong one says which tensors, where they differ, a trap that explains it, and the
    smallest graph where the answer is still wrong."""
    for k, (g, w) in enumerate(zip(got, want)):
        who = slot_name(k, leaves)
        if w is None and g is not None:
            why = "a leaf that does not require grad" if k < leaves else "not a leaf"
            raise Fail(f"On {where}: after {fn}, {who} has a .grad, but it is {why}: only leaves that "
                       "require grad accumulate one (its .grad stays None).")
        if w is not None and g is None:
            raise Fail(f"On {where}: after {fn}, {who} requires grad and the output depends on it, "
                       "but its .grad is still None.")
        if w is not None:
            ctx.as_array(f"{who}.grad", g, np.asarray(w), fn)
    wrong = [k for k, (g, w) in enumerate(zip(got, want)) if w is not None and not ctx.close(g, w)]
    if not wrong:
        return
    k = wrong[0]
    detail = ctx.mismatch(f"{slot_name(k, leaves)}.grad", got[k], np.asarray(want[k]), fn,
                          example=example_).feedback
    names = ", ".join(slot_name(j, leaves) for j in wrong)
    for trap_id, form in (traps_ or {}).items():
        if all((a is None) == (b is None) for a, b in zip(got, form)) and \
                np.allclose(flat_state(got), flat_state(form)):
            raise Fail(f"On {where}: after {fn}, the .grad of {names} is wrong. "
                       f"{QUESTION.trap(trap_id).explanation}\n{detail}", trap_id)
    raise Fail(f"On {where}: after {fn}, the .grad of {names} is wrong. {detail}")


def tiny_presets(leaves, requires):
    return [np.full(np.shape(x), 0.5) if r else None for x, r in zip(leaves, requires)]


# -- Square --------------------------------------------------------------------------------------
def square_args(rng, size):
    return {"name": "Square", "x": probes.away_from_halves(rng, (size,)), "dy": upstream(rng, (size,))}


@QUESTION.check("Square: forward values and backward gradient", points=2, hints=(
    "Try x = -3 by hand: what is dy/dx, and what does your backward give?",
    "What does the forward keep for the backward, and can the backward get x back from it?",
))
def square_values(ctx):
    for shape in ((7,), (3, 4)):
        x, dy = probes.away_from_halves(ctx.rng, shape), upstream(ctx.rng, shape)
        y, dx, _ = triple(ctx, drive(ctx, FN, "Square", x, dy, name="Square"), "Square", "y, dx, unchanged")
        want_y, want_dx, _ = ctx.ref.grader_function("Square", x, dy)
        ctx.expect_array("y", y, want_y, "Square.forward",
                         example=lambda: example(ctx, FN, square_args, lambda v: v[0], "y"))
        ctx.expect_array("dx", dx, want_dx, "Square.backward", traps={"saved-output-root": 2 * np.abs(x) * dy},
                         regions={"where x < 0": x < 0},
                         example=lambda: example(ctx, FN, square_args, lambda v: v[1], "dx"))


@QUESTION.check("Square's backward with create_graph on", points=2, hints=(
    "With create_graph=True the backward runs with recording on: which of its operations land on "
    "the tape?",
    "An array taken out of a tensor (.data) and wrapped again starts a new leaf: the tape stops there.",
))
def square_recorded(ctx):
    x, dy = probes.away_from_halves(ctx.rng, (6,)), upstream(ctx.rng, (6,))
    dx, on_tape, reaches_x, reaches_dy = ctx.unpack(drive(ctx, REC, "Square", x, dy, name="Square"), 4,
                                                    "Square.backward", "dx and what it is recorded from")
    ctx.expect_array("dx", dx, ctx.ref.grader_backward_recorded("Square", x, dy)[0], "Square.backward",
                     traps={"saved-output-root": 2 * np.abs(x) * dy}, regions={"where x < 0": x < 0},
                     example=lambda: example(ctx, REC, square_args, lambda v: v[0], "dx"))
    trap = QUESTION.trap("backward-not-differentiable").explanation
    if not on_tape or not reaches_x:
        what = ("is not on the tape at all (its grad_fn is None)" if not on_tape else
                "is on the tape, but the tape from it never reaches the input x (it reads a detached copy)")
        raise Fail(f"Square.backward, run with recording on and an x that requires grad, returned a "
                   f"gradient that {what}. {trap}", "backward-not-differentiable")
    if not reaches_dy:
        raise Fail("Square.backward, run with recording on, returned a gradient whose tape never "
                   "reaches grad_output: it was read as raw values. Its derivative with respect to "
                   "the upstream gradient is lost. " + trap, "backward-not-differentiable")


# -- backward() and grad() ------------------------------------------------------------------
def backward_problem(ctx, template, calls=1, preset=None):
    graph, leaves, requires, g = graph_problem(ctx.rng, template)
    preset = preset(leaves, requires) if preset else [None] * len(leaves)
    return (graph, leaves, requires, g, calls, preset), probes.formula(graph, len(leaves))


def run_backward(ctx, args):
    slots = len(args[0]) + len(args[1])
    return state_of(ctx, drive(ctx, BWD, *args), slots, "backward(...): the tensors' .grad")


@QUESTION.check("backward(): the .grad of every tensor after one call", points=2, hints=(
    "Which tensors get a .grad: every tensor, the leaves, or the leaves that require grad?",
    "A leaf read by two nodes (or twice by one) gets the sum of both shares.",
    "Walk the tape from the output, each tensor after every tensor that read it "
    "(reverse_topological), and add each node's shares into its inputs' gradients.",
))
def backward_once(ctx):
    for template in TEMPLATES:
        args, where = backward_problem(ctx, template)
        expect_state(ctx, run_backward(ctx, args), ctx.ref.grader_backward(*args), len(args[1]),
                     "backward()", where, example_=lambda: graph_example(
                         ctx, BWD, lambda x, r: {"calls": 1, "preset": [None] * len(x)}, flat_state, "every .grad"))


def some_grads(ctx):
    def preset(leaves, requires):
        return [upstream(ctx.rng, np.shape(x)) if r else None for x, r in zip(leaves, requires)]
    return preset


@QUESTION.check("backward(): two calls in a row, and a .grad already set", points=2, hints=(
    "Call it twice on the same output: what does PyTorch's x.grad hold after the second call?",
    "Why does every training loop call optimizer.zero_grad()?",
))
def backward_twice(ctx):
    for template in (TEMPLATES[0], TEMPLATES[3]):  # [3]: x0 + x1, where shared .grad objects alias
        args, where = backward_problem(ctx, template, calls=2)
        once = ctx.ref.grader_backward(*args[:4], 1, args[5])
        expect_state(ctx, run_backward(ctx, args), ctx.ref.grader_backward(*args), len(args[1]),
                     "two calls of backward()", where, {"grad-overwritten": once}, lambda: graph_example(
                         ctx, BWD, lambda x, r: {"calls": 2, "preset": [None] * len(x)}, flat_state,
                         "every .grad"))
    args, where = backward_problem(ctx, TEMPLATES[3], preset=some_grads(ctx))
    expect_state(ctx, run_backward(ctx, args), ctx.ref.grader_backward(*args), len(args[1]),
                 "backward() onto leaves whose .grad was already set", where)
    args, where = backward_problem(ctx, TEMPLATES[2], preset=some_grads(ctx))
    fresh = ctx.ref.grader_backward(*args[:5], [None] * len(args[1]))
    replaced = [f if f is not None else p for f, p in zip(fresh, list(args[5]) + [None] * len(args[0]))]
    expect_state(ctx, run_backward(ctx, args), ctx.ref.grader_backward(*args), len(args[1]),
                 "backward() onto leaves whose .grad was already set", where, {"grad-overwritten": replaced},
                 lambda: graph_example(ctx, BWD, lambda x, r: {"calls": 1, "preset": tiny_presets(x, r)},
                                       flat_state, "every .grad"))


def grad_problem(ctx, template, preset=None):
    args, where = backward_problem(ctx, template, preset=preset)
    graph, leaves, requires, g, _, presets = args
    wrt = [k for k, r in enumerate(requires) if r] + [len(leaves) + 1]  # and a tensor inside the graph
    return (graph, leaves, requires, g, wrt, presets), where


def run_grad(ctx, args):
    grads, state = ctx.unpack(drive(ctx, GRAD, *args), 2, "grad", "the gradients, the .grad values")
    return state_of(ctx, grads, len(args[4]), "grad(...)'s gradients"), \
        state_of(ctx, state, len(args[0]) + len(args[1]), "the tensors' .grad after grad(...)")


@QUESTION.check("grad(): the gradients it returns", points=2, hints=(
    "grad returns one gradient per tensor asked for, of its shape, in order; zeros for one the "
    "output does not depend on.",
    "A tensor inside the graph can be asked for too: its gradient is complete once every tensor "
    "that read it has passed its share back.",
))
def grad_values(ctx):
    for template in TEMPLATES:
        args, where = grad_problem(ctx, template)
        grads, _ = run_grad(ctx, args)
        want, _ = ctx.ref.grader_grad(*args)
        for k, g, w in zip(args[4], grads, want):
            if g is None:
                raise Fail(f"grad on {where} returned something other than a Tensor for "
                           f"{slot_name(k, len(args[1]))}: it returns one Tensor per input, zeros for "
                           "an input the output does not depend on.")
            ctx.expect_array(f"the gradient for {slot_name(k, len(args[1]))}", g, np.asarray(w),
                             f"grad on {where}", example=lambda: graph_example(
                                 ctx, GRAD, lambda x, r: {"wrt": [0], "preset": [None] * len(x)},
                                 lambda v: flat_state(v[0]), "the gradients"))


@QUESTION.check("grad(): the .grad of every tensor after the call", points=1, hints=(
    "Call grad on a graph whose leaves already hold a .grad: what should they hold afterwards?",
    "grad returns the gradients; it is the accumulating backward() that writes .grad.",
))
def grad_leaves_grad_alone(ctx):
    for preset in (some_grads(ctx), None):
        args, where = grad_problem(ctx, TEMPLATES[0], preset=preset)
        grads, state = run_grad(ctx, args)
        want_grads, want_state = ctx.ref.grader_grad(*args)
        changed = [slot_name(k, len(args[1])) for k, (g, w) in enumerate(zip(state, want_state))
                   if (g is None) != (w is None) or (w is not None and not ctx.close(g, w))]
        if changed:
            raise Fail(f"On {where}: grad() changed the .grad of {', '.join(changed)} (it was "
                       f"{'set' if preset else 'None'} before the call). "
                       + QUESTION.trap("functional-mutates-grad").explanation, "functional-mutates-grad")
        if not all(g is not None and ctx.close(g, w) for g, w in zip(grads, want_grads)):
            raise Fail(f"On {where}: grad() left every .grad alone, but the gradients it returned are "
                       "wrong, and this check counts only right answers (see the check on grad's "
                       "gradients).")


# -- second order -------------------------------------------------------------------------
LOSS = "the loss sum(c * x * x) + sum(a * x) ** 2 + sum(exp(b * x) * x)"


@QUESTION.check("grad() with create_graph=True, differentiated again", points=2, hints=(
    "What does create_graph=True change about the walk: where do its own operations go?",
    "The gradient is then a function of x on the tape; differentiate <gradient, v> once more.",
))
def second_order(ctx):
    x, v, a, b, c = probes.loss_problem(ctx.rng, 5)
    g, on_tape, hv = ctx.unpack(drive(ctx, SECOND, x, v, a, b, c), 3, "grad", "gradient, on tape, Hv")
    want_g, _, want_hv = ctx.ref.grader_second_order(x, v, a, b, c)
    ctx.expect_array("the gradient", g, want_g, f"grad(..., create_graph=True) of {LOSS}",
                     example=lambda: example(ctx, SECOND, loss_args, lambda v: v[0], "the gradient"))
    if not on_tape:
        raise Fail(f"grad(..., create_graph=True) of {LOSS} returned the right gradient, but not on "
                   "the tape (its grad_fn is None): nothing can differentiate it again. With "
                   "create_graph the walk runs with recording on, so the gradient is built from "
                   "tape operations.")
    ctx.expect_array("the gradient of <gradient, v> (the Hessian times v)", hv, want_hv,
                     f"grad applied to grad's own answer, on {LOSS}",
                     example=lambda: example(ctx, SECOND, loss_args, lambda v: v[2], "Hv"))


def loss_args(rng, size):
    return dict(zip(("x", "v", "a", "b", "c"), probes.loss_problem(rng, size)))


@QUESTION.check("RoundSTE: forward values and backward gradient (halves included)", points=2,
                kinks=("round-half",), hints=(
    "Which integer does 2.5 round to in numpy, and in PyTorch?",
    "What is the derivative of round, and what does a straight-through estimator pass back instead?",
))
def round_ste(ctx):
    for shape in ((9,), (2, 5)):
        x, dy = probes.with_halves(ctx.rng, shape), upstream(ctx.rng, shape)
        y, dx, _ = triple(ctx, drive(ctx, FN, "RoundSTE", x, dy, name="RoundSTE"), "RoundSTE", "y, dx, unchanged")
        want_y, want_dx, _ = ctx.ref.grader_function("RoundSTE", x, dy)
        ctx.expect_array("y", y, want_y, "RoundSTE.forward", regions={"at exact halves": np.abs(x % 1) == 0.5},
                         example=lambda: example(ctx, FN, round_args, lambda v: v[0], "y"))
        ctx.expect_array("dx", dx, want_dx, "RoundSTE.backward", traps={"ste-zero": np.zeros_like(dy)},
                         example=lambda: example(ctx, FN, round_args, lambda v: v[1], "dx"))


def round_args(rng, size):
    return {"name": "RoundSTE", "x": probes.with_halves(rng, (size,)), "dy": upstream(rng, (size,))}


@QUESTION.check("hvp: Hessian-vector products against finite differences of the gradient", points=3,
                hints=(
    "Differentiate the gradient: that needs a gradient that is itself on the tape.",
    "Every Function on the way must have a backward that the tape records, Square's included.",
    "hvp(f, x, v) is the gradient of <grad f(x), v> with respect to x.",
))
def hvp(ctx):
    for n in (4, 7):
        x, v, a, b, c = probes.loss_problem(ctx.rng, n)
        got = ctx.as_array("Hv", drive(ctx, HVP, x, v, a, b, c), x, "hvp")
        h = 1e-5
        by_differences = (ctx.ref.grader_gradient(x + h * v, a, b, c)
                          - ctx.ref.grader_gradient(x - h * v, a, b, c)) / (2 * h)
        if gradcheck.rel_error(got, by_differences) <= gradcheck.GRAD_RTOL:
            continue
        where = f"{LOSS} (its squares by your Square), x of size {n}"
        _blame_grad_first(ctx, got, x, v, a, b, c, h, where)
        if ctx.close(got, traps.hvp_without_square_term(x, v, a, b, c)):
            recorded = ctx.unpack(drive(ctx, REC, "Square", x, v, name="Square"), 4, "Square.backward", "dx, ...")
            if not (recorded[1] and recorded[2]):
                located = ctx.locate("Hv", got, by_differences)
                raise Fail(f"hvp on {where} misses the second derivative of each square. "
                           + QUESTION.trap("backward-not-differentiable").explanation
                           + (f"\n{located}" if located else ""), "backward-not-differentiable")
        raise Fail(ctx.mismatch("Hv", got, by_differences, f"hvp on {where}", example=lambda: example(
            ctx, HVP, loss_args, lambda v: v, "Hv")).feedback.replace(
            "is wrong:", "is wrong (expected: central differences of the reference's gradient along v):", 1))
    _double_backward(ctx)


STIFF = 1e18  # stiff * h**2 * v**3 is over GRAD_RTOL for every step h a difference could use


def _double_backward(ctx):
    """hvp must differentiate the gradient on the tape, not take differences of it: the loss
    gains stiff * sum((x - x0)**4), which is 0 with all its derivatives up to the third at x0 =
    x itself, so the exact Hv is unchanged, while a difference of gradients from x0 +- h v reads
    4 stiff h**2 v**3 (about 4e-4 at h = 1e-11; below that, rounding: 1e-16 / h)."""
    x, v, a, b, c = probes.loss_problem(ctx.rng, 5)
    got = ctx.as_array("Hv", drive(ctx, HVP, x, v, a, b, c, STIFF), x, "hvp")
    want = ctx.ref.grader_hvp(x, v, a, b, c, STIFF)
    if gradcheck.rel_error(got, want) <= gradcheck.GRAD_RTOL:
        return
    where = f"{LOSS} + {STIFF:g} * sum((x - x0)**4) at x = x0, x of size 5"
    raise Fail(ctx.mismatch("Hv", got, want, f"hvp on {where}").feedback
               + " Its Hessian at x0 is the same as without the quartic term, which only a "
               "difference of gradients taken away from x0 sees. "
               + QUESTION.trap("hvp-by-differences").explanation, "hvp-by-differences")


def _blame_grad_first(ctx, got, x, v, a, b, c, h, where):
    """hvp differentiates the learner's own grad(): when grad() is wrong here and hvp agrees with
    central differences of that wrong gradient, hvp is right as it is (issue 38: a mistake
    upstream is never blamed downstream)."""
    try:
        mine = [np.asarray(drive(ctx, GRADIENT, x + s * h * v, a, b, c, name="grad"), dtype=np.float64)
                for s in (1, -1)]
    except Fail:
        return
    if gradcheck.rel_error(mine[0], ctx.ref.grader_gradient(x + h * v, a, b, c)) <= gradcheck.GRAD_RTOL:
        return  # grad() is right here: the difference is hvp's own
    from_yours = (mine[0] - mine[1]) / (2 * h)
    if gradcheck.rel_error(got, from_yours) <= gradcheck.GRAD_RTOL:
        culprit = "grad" if _square_is_right(ctx, x, v) else "Square.backward"
        raise Fail(f"`Hv` from hvp on {where} is not the reference's, but hvp is right as it is: the "
                   f"difference comes from the gradient it differentiates, and there from {culprit}. "
                   f"Built from your own {culprit} instead, the reference gives exactly what your hvp "
                   f"returned. Fix {culprit} (its own checks say where the values differ), then "
                   "grade again.",
                   hints=(f"Fix {culprit} first: hvp is the derivative of the gradient along v, so it "
                          "inherits every mistake made on the way to that gradient.",))


def _square_is_right(ctx, x, v) -> bool:
    """Whether the learner's Square (forward and backward) agrees with the reference here."""
    try:
        y, dx, _ = drive(ctx, FN, "Square", x, v, name="Square")
    except (Fail, TypeError, ValueError):
        return False
    want_y, want_dx, _ = ctx.ref.grader_function("Square", x, v)
    return ctx.close(np.asarray(y, dtype=np.float64), want_y) and ctx.close(np.asarray(dx, dtype=np.float64), want_dx)
