# question: tape_autodiff
# expect: full
# Gradients in a dict keyed by slot, created lazily; ops via the operator module.
import operator
import numpy as np

BINARY = {"add": operator.add, "mul": operator.mul, "matmul": operator.matmul}
UNARY = {"relu": lambda a: np.maximum(a, 0), "sum": lambda a: np.asarray(np.sum(a)),
         "exp": np.exp, "log": np.log}


def op_forward(op, a, b):
    return BINARY[op](a, b) if op in BINARY else UNARY[op](a)


def op_backward(dout, op, a, b, out):
    g = np.asarray(dout, dtype=np.float64)
    if op == "add":
        return g, g
    if op == "mul":
        return g * b, g * a
    if op == "matmul":
        return g @ np.transpose(b), np.transpose(a) @ g
    da = {"relu": lambda: g * (a > 0), "sum": lambda: np.broadcast_to(g, a.shape).copy(),
          "exp": lambda: g * out, "log": lambda: g / a}[op]()
    return da, None


def tape_forward(graph, inputs):
    vals = [np.array(x, dtype=np.float64) for x in inputs]
    for op, i, j in graph:
        vals.append(op_forward(op, vals[i], vals[j] if j != -1 else None))
    return vals


def tape_backward(dout, graph, values):
    n_in = len(values) - len(graph)
    grads = {len(values) - 1: np.array(dout, dtype=np.float64)}
    for node in range(len(graph) - 1, -1, -1):
        slot = n_in + node
        if slot not in grads:
            continue                      # does not reach the output
        op, i, j = graph[node]
        shares = op_backward(grads.pop(slot), op, values[i], values[j] if j != -1 else None, values[slot])
        for s, share in zip((i, j), shares):
            if s != -1:
                grads[s] = grads[s] + share if s in grads else share
    return [grads.get(s, np.zeros_like(values[s])) for s in range(n_in)]
