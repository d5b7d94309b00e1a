# question: tape_autodiff
# expect: full
# micrograd style: each slot knows its parents; the backward order comes from a depth-first
# topological sort started at the output (micrograd's build_topo), not from the tape's order.
import numpy as np


def op_forward(op, a, b):
    if op in ("add", "mul", "matmul"):
        return np.asarray({"add": np.add, "mul": np.multiply, "matmul": np.matmul}[op](a, b), dtype=np.float64)
    if op == "relu":
        return np.asarray(a * (a > 0), dtype=np.float64)
    if op == "sum":
        return np.asarray(a.sum(), dtype=np.float64)
    return np.asarray(np.exp(a) if op == "exp" else np.log(a), dtype=np.float64)


def op_backward(dout, op, a, b, out):
    if op == "add":
        return dout.copy(), dout.copy()
    if op == "mul":
        return dout * b, dout * a
    if op == "matmul":
        return dout @ b.T, a.T @ dout
    if op == "relu":
        return dout * (a > 0), None
    if op == "sum":
        return dout * np.ones(a.shape), None
    if op == "exp":
        return dout * out, None
    return dout / a, None


def tape_forward(graph, inputs):
    values = [np.array(x, dtype=np.float64) for x in inputs]
    for op, i, j in graph:
        values.append(op_forward(op, values[i], values[j] if j != -1 else None))
    return values


def tape_backward(dout, graph, values):
    n_in = len(values) - len(graph)
    parents = {n_in + k: [s for s in (i, j) if s >= 0] for k, (_, i, j) in enumerate(graph)}
    topo, visited = [], set()

    def build_topo(v):
        if v not in visited:
            visited.add(v)
            for p in parents.get(v, []):
                build_topo(p)
            topo.append(v)
    build_topo(len(values) - 1)
    grad = {v: np.zeros(np.shape(values[v])) for v in range(len(values))}
    grad[len(values) - 1] = grad[len(values) - 1] + dout
    for v in reversed(topo):
        if v < n_in:
            continue
        op, i, j = graph[v - n_in]
        da, db = op_backward(grad[v], op, values[i], values[j] if j >= 0 else None, values[v])
        grad[i] = grad[i] + da
        if j >= 0:
            grad[j] = grad[j] + db
    return [grad[s] for s in range(n_in)]
