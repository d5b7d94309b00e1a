"""Hidden checks for tape_autodiff: record a tape, walk it backwards, accumulate on fan-out.

A graph is a list of nodes (op, i, j) over slots: the inputs first (2-D float64 arrays),
then one slot per node; j = -1 for the unary ops. The graphs are built here, at random,
from values the reference computes as the graph grows, so log only sees positive values,
exp only small ones, relu nothing near its kink, and nothing grows large: finite
differences stay accurate. The reference is the solution notebook (``ctx.ref``); the
known-wrong traversals below are the traps, run on the reference's own vector-Jacobian
products so a wrong answer can be named.
"""
from __future__ import annotations

import numpy as np

from grader.engine import gradcheck
from grader.engine.gradcheck import upstream
from grader.engine.question import Fail, Question, Trap

OPS = ("add", "mul", "matmul", "relu", "sum", "exp", "log")
UNARY = ("relu", "sum", "exp", "log")
BW = "tape_backward"

QUESTION = Question("tape_autodiff", "What autograd really does: a tape, walked backwards", traps=[
    Trap("fanout-overwrite", "A value used by several nodes (or twice by one node, like x * x) "
         "keeps only one node's share of its gradient: your backward assigns into the gradient "
         "buffer where it must add. By the chain rule the loss depends on that value through "
         "every use, so every consumer's share is summed into its buffer."),
    Trap("wrong-order", "Your backward walks the nodes in an order that is not reverse "
         "topological (e.g. the order they were recorded), so a node passes its gradient on "
         "before all of its consumers have added their shares. Every consumer is recorded after "
         "what it reads: walk the tape from the last node to the first."),
    Trap("no-zero-init", "Your backward remembers something between calls: gradient buffers "
         "from an earlier call are reused without being cleared, so a later call adds the earlier "
         "gradients onto its own (called twice with the same arguments, it answers differently). "
         "Start every call from fresh zero buffers, created inside the function."),
], difficulty="medium")


# -- building graphs ---------------------------------------------------------------------
def input_pool(rng, shapes):
    """2-D inputs away from 0 (|v| in [0.3, 1.5], so relu is never near its kink); the
    first one positive, so log always has an operand."""
    xs = [rng.uniform(0.3, 1.5, s) * rng.choice([-1.0, 1.0], s) for s in shapes]
    xs[0] = np.abs(xs[0])
    return xs


def fits(op, a, b=None) -> bool:
    """Whether op may take these operands: shapes agree, and the value stays safe."""
    if op in ("add", "mul"):
        return np.shape(a) == np.shape(b)
    if op == "matmul":
        return np.ndim(a) == 2 and np.ndim(b) == 2 and a.shape[1] == b.shape[0]
    if op == "relu":
        return np.min(np.abs(a)) >= 0.05 and np.mean(a > 0) >= 0.3  # off the kink, mostly alive
    if op == "sum":
        return np.ndim(a) == 2
    if op == "exp":
        return np.max(np.abs(a)) <= 2.5
    return np.min(a) >= 0.2  # log


def safe(out) -> bool:
    """A binary op's value neither vanishes (a dead branch) nor grows large."""
    return 0.1 <= np.max(np.abs(out)) <= 30.0


class Builder:
    """A graph grown node by node, with its values (from the reference) and use counts."""

    def __init__(self, ref, rng, inputs):
        self.ref, self.rng, self.inputs = ref, rng, inputs
        self.values = [np.asarray(x) for x in inputs]
        self.uses = [0] * len(inputs)
        self.graph = []

    def node(self, op, i, j=-1) -> int:
        b = self.values[j] if j >= 0 else None
        self.values.append(np.asarray(self.ref.op_forward(op, self.values[i], b)))
        self.graph.append((op, i, j))
        self.uses[i] += 1
        if j >= 0:
            self.uses[j] += 1
        self.uses.append(0)
        return len(self.values) - 1

    def pick(self, ok, fresh: float):
        """A slot satisfying ``ok``: unused ones with probability ``fresh``, recent ones first."""
        slots = [s for s, v in enumerate(self.values) if ok(v)]
        unused = [s for s in slots if self.uses[s] == 0]
        pool = unused if unused and self.rng.random() < fresh else slots
        if not pool:
            return None
        weight = np.arange(1, len(pool) + 1, dtype=float) ** 2  # later slots: deeper graphs
        return pool[self.rng.choice(len(pool), p=weight / weight.sum())]

    def place(self, op, fresh=0.6, tries=40):
        if op in UNARY:  # an input always fits: see input_pool
            return self.node(op, self.pick(lambda v: fits(op, v), fresh))
        for _ in range(tries):  # binary: x op x always fits, a random pair may be too large
            i = self.pick(lambda v: np.ndim(v) == 2 if op == "matmul" else True, fresh)
            j = self.pick(lambda v: fits(op, self.values[i], v), fresh)
            if j is not None and safe(self.ref.op_forward(op, self.values[i], self.values[j])):
                return self.node(op, i, j)

    def close(self):
        """Fold every value nobody reads into the last node, so all of them reach the output."""
        loose = [s for s in range(len(self.inputs), len(self.values) - 1) if self.uses[s] == 0]
        for s in loose:
            acc = len(self.values) - 1
            if np.shape(self.values[s]) != np.shape(self.values[acc]):
                s = s if np.ndim(self.values[s]) == 0 else self.node("sum", s)
                acc = acc if np.ndim(self.values[acc]) == 0 else self.node("sum", acc)
            product = self.values[s] * self.values[acc]
            self.node("mul" if np.max(np.abs(product)) <= 30.0 else "add", s, acc)


def random_graph(ctx, extra=6, fresh=0.6):
    """A random DAG with every op at least once, some value read by two nodes or more, and
    every node reaching the output (a 0-d loss, as any sum node ends up in it), where every
    input has a gradient that is not all zeros (relu can kill a branch). Returns (graph, inputs)."""
    for _ in range(20):
        graph, inputs = grow(ctx, extra, fresh)
        values = ctx.ref.tape_forward(graph, inputs)
        grads = ctx.ref.tape_backward(np.ones(np.shape(values[-1])), graph, values)
        if min(np.max(np.abs(g)) for g in grads) > 1e-3:
            break
    return graph, inputs


def grow(ctx, extra, fresh, shapes=((2, 3), (3, 2), (2, 3), (3, 3))):
    b = Builder(ctx.ref, ctx.rng, input_pool(ctx.rng, shapes))
    plan = list(OPS) + list(ctx.rng.choice(OPS, size=extra))
    ctx.rng.shuffle(plan)
    for op in plan:
        b.place(op, fresh)
    inner = range(len(b.inputs), len(b.values))
    if not any(b.uses[s] >= 2 for s in inner):  # make sure a node fans out
        s = max((s for s in inner if b.uses[s] == 1), default=len(b.values) - 1)
        b.node("add", s, s)
    b.close()
    return b.graph, b.inputs


def chain(ctx, length=6):
    """Each node reads the one before it (and a fresh input for binary ops): no fan-out.
    Two inputs of each shape, so some stay unused (their gradient is zeros)."""
    shapes = [(2, 3), (2, 3), (3, 2), (3, 2), (3, 3), (3, 3), (2, 2), (2, 2)]
    b = Builder(ctx.ref, ctx.rng, input_pool(ctx.rng, shapes))
    b.node("exp", 1)
    for _ in range(200):  # a value no op fits any more ends the chain early
        if len(b.graph) == length:
            break
        op, last = OPS[ctx.rng.integers(len(OPS))], len(b.values) - 1
        if op in UNARY:
            if fits(op, b.values[last]) and not (op == "sum" and len(b.graph) < length - 1):
                b.node(op, last)
            continue
        partners = [s for s in range(len(b.inputs))
                    if b.uses[s] == 0 and fits(op, b.values[last], b.values[s])]
        if partners and safe(ctx.ref.op_forward(op, b.values[last], b.values[partners[0]])):
            b.node(op, last, partners[0])
    return b.graph, b.inputs


def describe(graph, n_in) -> str:
    lines = [f"  v{n_in + k} = {op}(v{i})" if j < 0 else f"  v{n_in + k} = {op}(v{i}, v{j})"
             for k, (op, i, j) in enumerate(graph)]
    ins = "v0 is the input" if n_in == 1 else f"v0..v{n_in - 1} are the inputs"
    return f"The graph ({ins}, v{n_in + len(graph) - 1} the output):\n" + "\n".join(lines)


def paths_to_output(graph, n_slots) -> list[int]:
    """Paths from each slot to the output (x * x counts twice): over one, its gradient is a sum."""
    paths = [0] * (n_slots - 1) + [1]
    for k in reversed(range(len(graph))):
        for s in (s for s in graph[k][1:] if s >= 0):
            paths[s] += paths[n_slots - len(graph) + k]
    return paths


def one_line(a) -> str:
    return " ".join(np.array2string(np.asarray(a), precision=4, separator=", ").split())


def reference_values(ctx, graph, inputs):
    return [np.asarray(v, dtype=np.float64) for v in ctx.ref.tape_forward(graph, inputs)]


# -- the known-wrong traversals (traps) --------------------------------------------------
def wrong_walk(ctx, dout, graph, values, forward_order=False, overwrite=False, b_first=False):
    """A traversal with the reference's per-op backward and one or two of the mistakes.
    (Neither mistake is the right traversal: that one is ``ctx.ref.tape_backward``.)"""
    if not (forward_order or overwrite):
        raise ValueError("the right traversal is ctx.ref.tape_backward")
    n_in = len(values) - len(graph)
    grads = [np.zeros(np.shape(v)) for v in values]
    grads[-1] = grads[-1] + dout
    order = range(len(graph)) if forward_order else reversed(range(len(graph)))
    for k in order:
        op, i, j = graph[k]
        da, db = ctx.ref.op_backward(grads[n_in + k], op, values[i], values[j] if j >= 0 else None,
                                     values[n_in + k])
        shares = [(i, da)] + ([(j, db)] if j >= 0 else [])
        for s, share in (shares[::-1] if b_first else shares):
            grads[s] = share if overwrite else grads[s] + share
    return grads[:n_in]


def trap_answers(ctx, dout, graph, values):
    walks = [("fanout-overwrite", dict(overwrite=True)), ("fanout-overwrite", dict(overwrite=True, b_first=True)),
             ("wrong-order", dict(forward_order=True)), ("wrong-order", dict(forward_order=True, overwrite=True))]
    return [(trap, flat(wrong_walk(ctx, dout, graph, values, **kw))) for trap, kw in walks]


# -- reading and judging the learner's gradients -----------------------------------------
def flat(arrays) -> np.ndarray:
    return np.concatenate([np.ravel(a) for a in arrays])


def split(vector, like):
    sizes = np.cumsum([np.size(a) for a in like])[:-1]
    return [part.reshape(np.shape(a)) for part, a in zip(np.split(vector, sizes), like)]


def call_backward(ctx, dout, graph, values, inputs):
    grads = ctx.unpack(ctx.call(BW, dout, graph, values), len(inputs), BW,
                       f"one gradient per input: {len(inputs)} arrays")
    return [ctx.as_array(f"grads[{n}]", g, x, BW) for n, (g, x) in enumerate(zip(grads, inputs))]


def repeats_itself(ctx, dout, graph, values, inputs, first) -> bool:
    """Called again with the same arguments, does the learner's backward give the same?"""
    try:
        again = call_backward(ctx, dout, graph, values, inputs)
    except Fail:
        return True  # a second call that breaks says nothing about state
    return ctx.close(flat(again), flat(first))


def expect_grads(ctx, graph, inputs, dout, got=None):
    """The learner's grads (``got``, or a fresh call) must match finite differences of the
    reference forward, for every input at once; a wrong answer is named if it can be."""
    values = reference_values(ctx, graph, inputs)
    dout = np.asarray(dout, dtype=np.float64)
    grads = call_backward(ctx, dout, graph, values, inputs) if got is None else got
    f = lambda x: ctx.ref.tape_forward(graph, split(x, inputs))[-1]  # noqa: E731
    err = gradcheck.gradient_error(f, flat(inputs), dout, flat(grads), ctx.rng)
    if err <= gradcheck.GRAD_RTOL:
        return grads
    trap = next((t for t, wrong in trap_answers(ctx, dout, graph, values)
                 if ctx.close(flat(grads), wrong)), None)
    if trap is None and not repeats_itself(ctx, dout, graph, values, inputs, grads):
        trap = "no-zero-init"
    right = ctx.ref.tape_backward(dout, graph, values)
    bad = [n for n, (g, r) in enumerate(zip(grads, right)) if not ctx.close(g, r)]
    paths = paths_to_output(graph, len(values))
    where = ", ".join(f"grads[{n}] (v{n} reaches the output by {paths[n]} path{'s' * (paths[n] != 1)})"
                      for n in bad)
    first = bad[0] if bad else 0
    label = f"expected grads[{first}]: "
    detail = (f"\nWrong: {where}.\n{describe(graph, len(inputs))}\n"
              f"  {label}{one_line(right[first])}\n  {'yours:'.ljust(len(label))}{one_line(grads[first])}")
    why = f" {QUESTION.trap(trap).explanation}" if trap else ""
    raise Fail(f"`grads` from {BW} does not match finite differences (relative error {err:.2g}, "
               f"tolerance {gradcheck.GRAD_RTOL:g}).{why}{detail}", trap)


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


@QUESTION.check("op_backward: each op's shares match finite differences", points=2, hints=(
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


@QUESTION.check("a chain of ops: every gradient flows back to the inputs", points=2, hints=(
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


@QUESTION.check("fan-out: a value read twice or more sums its gradients", points=2, hints=(
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
                       flat(second), flat(first) + flat(right)) else ""), "no-zero-init")
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
