# question: tape_autodiff
# expect: wrong
# log's backward multiplies by a where it must divide: d log(a) / da = 1 / a.
import numpy as np

FORWARD = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "matmul": lambda a, b: a @ b,
    "relu": lambda a, b: np.where(a > 0, a, 0.0),
    "sum": lambda a, b: np.array(a.sum()),
    "exp": lambda a, b: np.exp(a),
    "log": lambda a, b: np.log(a),
}

BACKWARD = {
    "add": lambda g, a, b, out: (g, g),
    "mul": lambda g, a, b, out: (g * b, g * a),
    "matmul": lambda g, a, b, out: (g @ b.T, a.T @ g),
    "relu": lambda g, a, b, out: (np.where(a > 0, g, 0.0), None),
    "sum": lambda g, a, b, out: (np.ones_like(a) * g, None),
    "exp": lambda g, a, b, out: (g * out, None),
    "log": lambda g, a, b, out: (g * a, None),
}


def op_forward(op, a, b):
    return np.asarray(FORWARD[op](a, b), dtype=np.float64)


def op_backward(dout, op, a, b, out):
    return BACKWARD[op](dout, a, b, out)
def tape_forward(graph, inputs):
    values = list(inputs)
    for op, i, j in graph:
        values.append(op_forward(op, values[i], None if j < 0 else values[j]))
    return values


def tape_backward(dout, graph, values):
    n_in = len(values) - len(graph)
    grads = {len(values) - 1: np.asarray(dout, dtype=np.float64)}
    for k in range(len(graph) - 1, -1, -1):
        op, i, j = graph[k]
        g = grads.pop(n_in + k, None)
        if g is None:
            continue                      # nothing flows through this node
        shares = op_backward(g, op, values[i], None if j < 0 else values[j], values[n_in + k])
        for slot, share in zip((i, j), shares):
            if slot >= 0 and share is not None:
                grads[slot] = grads[slot] + share if slot in grads else share
    return [grads.get(s, np.zeros(np.shape(values[s]))) for s in range(n_in)]
