"""Hidden checks for tape_autodiff: record a tape, walk it backwards, accumulate on fan-out.

A graph is a list of nodes (op, i, j) over slots: the inputs first (2-D float64 arrays),
then one slot per node; j = -1 for the unary ops. The graphs are built here, at random,
from values the reference computes as the graph grows, so log only sees positive values,
exp only small ones, relu nothing near its kink, and nothing grows large: finite
differences stay accurate. The reference is the solution notebook (``ctx.ref``); the
known-wrong traversals (``traps.py``) are the traps, run on the reference's own vector-Jacobian
products so a wrong answer can be named.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.checks.tape_autodiff.probes import (BW, OPS, call_backward, chain, fits, flat,
                                                input_pool, random_graph, reference_values)
from backprop_traps.grader.checks.tape_autodiff.traps import TRAPS, expect_grads
from backprop_traps.grader.engine.gradcheck import upstream
from backprop_traps.grader.engine.question import Fail, Question

QUESTION = Question("tape_autodiff", "What autograd really does: a tape, walked backwards", traps=TRAPS,
                    difficulty="medium", kinks={"relu-at-0": "relu's operand exactly 0 (its derivative there is 0)"})


# -- checks ------------------------------------------------------------------------------
def op_operands(rng, op):
    a = rng.uniform(0.3, 1.5, (2, 3)) * rng.choice([-1.0, 1.0], (2, 3))
    shapes = {"add": (2, 3), "mul": (2, 3), "matmul": (3, 4)}
    b = rng.standard_normal(shapes[op]) if op in shapes else None
    return (np.abs(a) if op == "log" else a), b


@QUESTION.check("op_forward: each of the seven ops", points=1, hints=(
    "add and mul are elementwise on two arrays of one shape; matmul is a matrix product.",
    "sum adds every entry into one number: return it as a 0-d float64 array.",
))
def op_values(ctx):
    for op in OPS:
        a, b = op_operands(ctx.rng, op)
        out = ctx.call("op_forward", op, a, b)
        ctx.expect_array("out", out, ctx.ref.op_forward(op, a, b), f"op_forward('{op}', ...)")


@QUESTION.check("op_backward: each op's shares match finite differences", points=2, kinks=("relu-at-0",), hints=(
    "Nudge one entry of a and watch how every entry of the output moves: da sums dout times "
    "those slopes.",
    "For a matrix product the shares must have the operands' shapes: (m, n) with (k, n) can "
    "only meet one way to give (m, k).",
    "exp's slope is its own value, which the backward receives as `out`; sum's dout is one "
    "number that every entry of a receives.",
))
def op_shares(ctx):
    for op in OPS:
        a, b = op_operands(ctx.rng, op)
        out = ctx.ref.op_forward(op, a, b)
        dout = np.asarray(upstream(ctx.rng, np.shape(out)))
        fn = f"op_backward for '{op}'"
        da, db = ctx.unpack(ctx.call("op_backward", dout, op, a, b, out), 2, fn, "da, db")
        ctx.expect_gradient("da", da, lambda z: ctx.ref.op_forward(op, z, b), a, dout, fn)
        if b is not None:
            ctx.expect_gradient("db", db, lambda z: ctx.ref.op_forward(op, a, z), b, dout, fn)
    # relu at its kink: exact zeros pass no gradient (the derivative at 0 is 0, [a > 0]); no
    # finite differences at a kink, the reference's own answer
    a = np.array([[0.0, -0.0, 1.5], [-2.0, 0.0, 0.25]])
    out = ctx.ref.op_forward("relu", a, None)
    dout = np.asarray(upstream(ctx.rng, a.shape))
    da, _ = ctx.unpack(ctx.call("op_backward", dout, "relu", a, None, out), 2,
                       "op_backward for 'relu'", "da, db")
    ctx.expect_array("da", da, ctx.ref.op_backward(dout, "relu", a, None, out)[0],
                     "op_backward for 'relu' (at a = 0 exactly, where the derivative is 0)",
                     regions={"where a is exactly 0": a == 0})


@QUESTION.check("tape_forward records every value, the inputs first", points=1, hints=(
    "values[s] is the value of slot s: slots 0 .. n_in - 1 are the inputs, node k fills slot n_in + k.",
    "Run the nodes in the order of the list; each reads only slots that already have values.",
))
def tape_values(ctx):
    graph, inputs = random_graph(ctx)
    expected = reference_values(ctx, graph, inputs)
    got = ctx.call("tape_forward", graph, inputs)
    ctx.unpack(got, len(expected), "tape_forward",
               f"a list of {len(inputs)} inputs then {len(graph)} node values")
    for s, (v, e) in enumerate(zip(got, expected)):
        what = f"values[{s}]" if s < len(inputs) else f"values[{s}] ({graph[s - len(inputs)][0]})"
        ctx.expect_array(what, v, e, "tape_forward")


@QUESTION.check("a chain of ops: the inputs' gradients", points=2, hints=(
    "The output's own gradient is dout; every other slot starts at zero.",
    "A node can pass its gradient to its operands only once that gradient is final: which "
    "node is the last one to contribute to it?",
    "Inputs that no node reads still get a gradient: zeros of their shape.",
))
def chain_gradients(ctx):
    for length in (4, 7):
        graph, inputs = chain(ctx, length)
        out = ctx.ref.tape_forward(graph, inputs)[-1]
        expect_grads(ctx, graph, inputs, upstream(ctx.rng, np.shape(out)))


@QUESTION.check("fan-out: a value read twice or more", points=2, hints=(
    "In f = x * y + x, how many terms does df/dx have?",
    "The loss depends on a value through every node that reads it; the chain rule adds one "
    "share per use, even when one node reads the same slot twice.",
    "Give each slot a buffer and add each consumer's share into it; assigning keeps only the "
    "last one.",
))
def fan_out(ctx):
    rng = ctx.rng
    x, y, w = input_pool(rng, [(3, 3), (3, 3), (3, 3)])
    cases = [([("mul", 0, 0)], [x]), ([("add", 0, 0)], [y]), ([("matmul", 0, 0)], [y]),
             ([("mul", 0, 1), ("add", 2, 0)], [x, y])]
    for _ in range(50):  # a residual block, relu(x @ w) + x, with x @ w clear of relu's kink
        x2, w2 = input_pool(rng, [(2, 3), (3, 3)])
        if fits("relu", x2 @ w2):
            cases.append(([("matmul", 0, 1), ("relu", 2, -1), ("add", 3, 0)], [x2, w2]))
            break
    cases.append(([("exp", 1, -1), ("mul", 2, 0), ("add", 3, 2), ("mul", 4, 2)], [x * 0.5, w]))
    cases.append(random_graph(ctx, extra=5, fresh=0.2))
    for graph, inputs in cases:
        out = ctx.ref.tape_forward(graph, inputs)[-1]
        expect_grads(ctx, graph, inputs, upstream(rng, np.shape(out)))


@QUESTION.check("random graphs: all seven ops, fan-out, against finite differences", points=3, hints=(
    "Get the chain and the fan-out checks right first: this one mixes both.",
    "sum returns a 0-d value: its gradient is a 0-d array too, and add or mul of two 0-d "
    "values works like any other.",
    "Walk the nodes from last to first, add every share into its slot's buffer, and return "
    "the input slots' buffers.",
))
def random_graphs(ctx):
    for _ in range(4):
        graph, inputs = random_graph(ctx)
        out = ctx.ref.tape_forward(graph, inputs)[-1]
        expect_grads(ctx, graph, inputs, upstream(ctx.rng, np.shape(out)))


@QUESTION.check("backward called twice: every call starts from zero", points=1, hints=(
    "Call your backward twice with the same arguments: do you get the same answer?",
    "Where do your gradient buffers live between calls?",
))
def two_calls(ctx):
    graph, inputs = random_graph(ctx, extra=3)
    values = reference_values(ctx, graph, inputs)
    first = expect_grads(ctx, graph, inputs, upstream(ctx.rng, np.shape(values[-1])))
    dout = np.asarray(upstream(ctx.rng, np.shape(values[-1])))
    second = call_backward(ctx, dout, graph, values, inputs)
    right = ctx.ref.tape_backward(dout, graph, values)
    if not ctx.close(flat(second), flat(right)):
        raise Fail(f"The first call of {BW} was right, but the second, on the same graph with "
                   f"another dout, is not. {QUESTION.trap('no-zero-init').explanation}"
                   + ("\nIt returned the sum of both calls' gradients." if ctx.close(
                       flat(second), flat(first) + flat(right)) else
                      "\nIt returned the first call's gradients again, whatever the new dout." if ctx.close(
                       flat(second), flat(first)) else ""), "no-zero-init")
    expect_grads(ctx, graph, inputs, dout, got=second)


@QUESTION.check("inputs left unchanged", points=1, hints=(
    "Does a backward change dout in place (e.g. zeroing entries for relu) or add into a "
    "recorded value?",
    "Gradient buffers must be new arrays, not the arrays you were given.",
))
def inputs_unchanged(ctx):
    graph, inputs = random_graph(ctx, extra=3)
    values = reference_values(ctx, graph, inputs)
    dout = np.asarray(upstream(ctx.rng, np.shape(values[-1])))
    a = input_pool(ctx.rng, [(2, 3)])[0]
    calls = [("tape_forward", (graph, inputs), ["graph", "inputs"]),
             ("tape_backward", (dout, graph, values), ["dout", "graph", "values"]),
             *[("op_backward", (a.copy(), op, a, None, ctx.ref.op_forward(op, a, None)),
                ["dout", "op", "a", "b", "out"]) for op in ("relu", "exp")]]
    ctx.expect_inputs_unchanged([(fn, args, names, getattr(ctx.ref, fn)(*args))
                                 for fn, args, names in calls])
