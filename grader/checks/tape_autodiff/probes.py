"""Graphs, inputs and the reading of answers for the tape_autodiff checks.

A graph is a list of nodes (op, i, j) over slots: the inputs first (2-D float64 arrays),
then one slot per node; j = -1 for the unary ops. Graphs are built at random from values the
reference computes as the graph grows, so log only sees positive values, exp only small
ones, and nothing grows large: finite differences stay accurate.
"""
from __future__ import annotations

import numpy as np

OPS = ("add", "mul", "matmul", "relu", "sum", "exp", "log")
UNARY = ("relu", "sum", "exp", "log")
BW = "tape_backward"


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



# -- reading the learner's gradients -----------------------------------------------------
def flat(arrays) -> np.ndarray:
    return np.concatenate([np.ravel(a) for a in arrays])


def split(vector, like):
    sizes = np.cumsum([np.size(a) for a in like])[:-1]
    return [part.reshape(np.shape(a)) for part, a in zip(np.split(vector, sizes), like)]


def call_backward(ctx, dout, graph, values, inputs):
    grads = ctx.unpack(ctx.call(BW, dout, graph, values), len(inputs), BW,
                       f"one gradient per input: {len(inputs)} arrays")
    return [ctx.as_array(f"grads[{n}]", g, x, BW) for n, (g, x) in enumerate(zip(grads, inputs))]

