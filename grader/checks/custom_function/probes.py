"""Inputs and calls for the custom_function checks.

The learner's code runs on a tape engine that the solution's setup cell defines (``Tensor``,
``Function``, ``apply_function``, ...), and the same cell defines the ``grader_*`` functions
through which every check calls it: arrays in, arrays out. The grader runs its own copy of
that cell after the learner's code (``Question.grader_setup``), so the engine and the calls
are the grader's whatever the learner edited. Expected answers are the same calls on the
reference (``ctx.ref``, the solution notebook).

A graph is a list of nodes ``(op, i, j)`` over numbered slots, the leaves first (see the
setup cell). The graphs here are small templates with fan-out (a slot read twice, or twice
by one node), a leaf that does not require grad, an unused leaf, and a non-scalar output,
filled with values in [-1, 1], so exp never grows large.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.question import Fail

FN, REC, BWD, GRAD = "grader_function", "grader_backward_recorded", "grader_backward", "grader_grad"
SECOND, HVP, GRADIENT = "grader_second_order", "grader_hvp", "grader_gradient"
SAYS = {FN: "{name} (its forward, then its backward)", REC: "{name}.backward (run with create_graph)",
        BWD: "backward(output, grad_output)", GRAD: "grad(output, inputs, grad_output)",
        SECOND: "grad(..., create_graph=True), then grad again", HVP: "hvp(f, x, v)",
        GRADIENT: "grad(output, inputs)"}


def rehome(caller) -> None:
    """In process (``grade validate``, nbgrader's last resort) the namespace is often a copy of
    the reference's with some names replaced, while its functions still read the reference's
    globals: the ``grader_*`` calls would never meet the replacement. Rebind every function that
    was defined beside the setup cell to the namespace itself, as loading the code there would
    (the sandbox needs none of this: the code is loaded into the one namespace it runs in)."""
    import types
    namespace = getattr(caller, "namespace", None)
    if not isinstance(namespace, dict) or namespace.get("__rehomed__") is namespace:
        return
    for key, value in list(namespace.items()):
        home = getattr(value, "__globals__", None)
        if isinstance(value, types.FunctionType) and home is not namespace and "grader_function" in home:
            namespace[key] = types.FunctionType(value.__code__, namespace, value.__name__,
                                                value.__defaults__, value.__closure__)
    namespace["__rehomed__"] = namespace


def drive(ctx, driver: str, *args, name: str = ""):
    """``driver(*args)`` in the sandbox; a failure names the learner's function, not the driver."""
    rehome(ctx.sandbox)
    try:
        return ctx.call(driver, *args)
    except Fail as failure:
        said = SAYS[driver].format(name=name)
        raise Fail(failure.feedback.replace(f"{driver}()", said).replace(driver, said),
                   failure.trap, failure.settled) from None


# -- graphs -----------------------------------------------------------------------------------
# (leaf count, leaf shape, nodes, which leaves require grad, a scalar output?)
TEMPLATES = [
    (3, (3,), [("mul", 0, 1), ("add", 3, 0), ("scale", 4, 0.5), ("exp", 5, -1), ("mul", 6, 2),
               ("sum", 7, -1)], (True, True, False), True),
    (2, (4,), [("mul", 0, 0), ("mul", 2, 1), ("add", 3, 0), ("scale", 0, 0.3), ("exp", 5, -1),
               ("mul", 4, 6)], (True, True), False),
    (4, (2, 3), [("add", 0, 1), ("mul", 4, 2), ("scale", 5, -0.7), ("exp", 6, -1), ("mul", 7, 0),
                 ("add", 8, 5), ("sum", 9, -1)], (True, False, True, True), True),
    # two leaves that both require grad, added: Add passes one gradient to both, so an engine
    # that hands both leaves the same .grad object and adds in place aliases them
    (2, (3,), [("add", 0, 1), ("scale", 2, 1.5)], (True, True), False),
]
TINY = [  # the smallest graphs, for a failing example a learner can work by hand
    (1, (1,), [("mul", 0, 0)], (True,), False),
    (2, (1,), [("mul", 0, 1), ("add", 2, 0)], (True, True), False),
    (2, (2,), [("mul", 0, 1), ("add", 2, 0), ("sum", 3, -1)], (True, False), True),
]


def graph_problem(rng, template):
    """(graph, leaves, requires, grad_output) for one template; grad_output None (ones) for a
    scalar output, else random."""
    count, shape, graph, requires, scalar = template
    leaves = [rng.uniform(-1.0, 1.0, shape) for _ in range(count)]
    return list(graph), leaves, list(requires), None if scalar else rng.standard_normal(shape)


def formula(graph, count: int) -> str:
    """The graph as one expression of its leaves x0, x1, ..."""
    terms = [f"x{k}" for k in range(count)]
    for op, i, j in graph:
        a = terms[i]
        terms.append({"add": lambda: f"({a} + {terms[j]})", "mul": lambda: f"{a} * {terms[j]}",
                      "scale": lambda: f"{j:g} * {a}", "exp": lambda: f"exp({a})",
                      "sum": lambda: f"sum({a})", "square": lambda: f"Square({a})",
                      "round": lambda: f"RoundSTE({a})"}[op]())
    return "y = " + terms[-1]


def shown(graph, leaves, requires, grad_output) -> dict:
    """A graph problem as a failing example shows it."""
    out = {"graph": formula(graph, len(leaves))}
    for k, (x, r) in enumerate(zip(leaves, requires)):
        out[f"x{k}" + ("" if r else " (requires_grad=False)")] = x
    if grad_output is not None:
        out["grad_output"] = grad_output
    return out


def flat_state(state) -> np.ndarray:
    """Every slot's .grad (or gradient) in one array, None as an empty slot: for examples."""
    return np.concatenate([np.ravel(np.asarray(g, dtype=np.float64)) if g is not None else np.zeros(0)
                           for g in state]) if state else np.zeros(0)


def state_of(ctx, value, count: int, what: str) -> list:
    """The learner's list of ``count`` .grad values (None or an array), or Fail."""
    if not isinstance(value, list) or len(value) != count:
        raise Fail(f"{what} did not come back as the grader expects (one entry per tensor)")
    return value


# -- the loss of the second-order checks ------------------------------------------------------
def loss_problem(rng, n: int):
    """(x, v, a, b, c) of shape (n,): the setup cell's loss sum(c x^2) + (a . x)^2 + sum(exp(b x) x)
    has a Hessian that is neither diagonal (the (a . x)^2 term) nor zero without the squares."""
    x, v = rng.uniform(-1.0, 1.0, n), rng.standard_normal(n)
    a, b, c = rng.uniform(-1.0, 1.0, n), rng.uniform(-0.8, 0.8, n), rng.uniform(0.5, 1.5, n)
    return x, v, a, b, c


def away_from_halves(rng, shape) -> np.ndarray:
    """Values of both signs at least 0.1 from a half-integer and from 0."""
    base = rng.integers(-3, 4, shape) + rng.choice([-1.0, 1.0], shape) * rng.uniform(0.1, 0.4, shape)
    return np.where(np.abs(base) < 0.1, 0.25, base)


def with_halves(rng, shape) -> np.ndarray:
    """Mostly exact halves (0.5, 1.5, -2.5, ...): round-half-to-even decides them."""
    x = away_from_halves(rng, shape)
    halves = rng.integers(-4, 4, shape) + 0.5
    return np.where(rng.random(shape) < 0.6, halves, x)
