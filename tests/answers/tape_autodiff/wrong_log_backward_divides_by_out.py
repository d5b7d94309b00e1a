# question: tape_autodiff
# expect: wrong
# The log backward divides by the output instead of the input; tape_backward itself is right.
# log is rare in the graphs, so every tape check must still find op_backward as the cause.
import functools
import numpy as np

FWD = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "matmul": lambda a, b: a @ b,
    "relu": lambda a, b: np.maximum(a, 0.0),
    "sum": lambda a, b: np.array(a.sum()),
    "exp": lambda a, b: np.exp(a),
    "log": lambda a, b: np.log(a),
}

BWD = {
    "add": lambda g, a, b, o: (g, g),
    "mul": lambda g, a, b, o: (g * b, g * a),
    "matmul": lambda g, a, b, o: (g @ b.T, a.T @ g),
    "relu": lambda g, a, b, o: (g * (a > 0), None),
    "sum": lambda g, a, b, o: (np.full(a.shape, float(g)), None),
    "exp": lambda g, a, b, o: (g * o, None),
    "log": lambda g, a, b, o: (g / o, None),
}


def op_forward(op, a, b):
    return FWD[op](a, b)


def op_backward(dout, op, a, b, out):
    return BWD[op](np.asarray(dout, dtype=np.float64), a, b, out)


def tape_forward(graph, inputs):
    values = [np.asarray(v, dtype=np.float64) for v in inputs]
    for op, i, j in graph:
        values.append(op_forward(op, values[i], None if j < 0 else values[j]))
    return values


def tape_backward(dout, graph, values):
    n_in = len(values) - len(graph)
    last = len(values) - 1
    consumers = {}
    for k, (op, i, j) in enumerate(graph):
        for pos, s in enumerate((i, j)):
            if s >= 0:
                consumers.setdefault(s, []).append((n_in + k, pos))

    @functools.lru_cache(maxsize=None)
    def grad(slot):
        total = np.zeros_like(values[slot])
        if slot == last:
            total = total + np.asarray(dout, dtype=np.float64)
        for node, pos in consumers.get(slot, ()):
            op, i, j = graph[node - n_in]
            g = grad(node)
            share = op_backward(g, op, values[i], None if j < 0 else values[j], values[node])[pos]
            total = total + share
        return total

    return [grad(s) for s in range(n_in)]
