# question: tape_autodiff
# expect: trap=no-zero-init
# The gradient buffers live on a module-level cache keyed by the shapes (to save allocations)
# and are never cleared: a second call adds onto the first.
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
    "log": lambda g, a, b, out: (g / a, None),
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



_cache = {}


def tape_backward(dout, graph, values):
    n_in = len(values) - len(graph)
    key = tuple(np.shape(v) for v in values)
    grads = _cache.setdefault(key, [np.zeros(np.shape(v)) for v in values])
    grads[-1] += dout
    for k in reversed(range(len(graph))):
        op, i, j = graph[k]
        da, db = op_backward(grads[n_in + k], op, values[i], values[j] if j >= 0 else None, values[n_in + k])
        grads[i] += da
        if j >= 0:
            grads[j] += db
    return [g.copy() for g in grads[:n_in]]
