# question: tape_autodiff
# expect: full
# minitorch style: one Function class per op with static forward and backward, a registry
# from op names to classes, and a backward that walks the tape from the last node.
import numpy as np


class Add:
    @staticmethod
    def forward(a, b):
        return a + b

    @staticmethod
    def backward(d, a, b, out):
        return d, d


class Mul:
    @staticmethod
    def forward(a, b):
        return a * b

    @staticmethod
    def backward(d, a, b, out):
        return d * b, d * a


class MatMul:
    @staticmethod
    def forward(a, b):
        return np.matmul(a, b)

    @staticmethod
    def backward(d, a, b, out):
        return np.matmul(d, b.T), np.matmul(a.T, d)


class ReLU:
    @staticmethod
    def forward(a, b):
        return np.maximum(a, 0.0)

    @staticmethod
    def backward(d, a, b, out):
        return d * (a > 0).astype(np.float64), None


class Sum:
    @staticmethod
    def forward(a, b):
        return np.asarray(np.sum(a))

    @staticmethod
    def backward(d, a, b, out):
        return np.broadcast_to(d, a.shape).copy(), None


class Exp:
    @staticmethod
    def forward(a, b):
        return np.exp(a)

    @staticmethod
    def backward(d, a, b, out):
        return d * out, None


class Log:
    @staticmethod
    def forward(a, b):
        return np.log(a)

    @staticmethod
    def backward(d, a, b, out):
        return d / a, None


FUNCTIONS = {"add": Add, "mul": Mul, "matmul": MatMul, "relu": ReLU, "sum": Sum, "exp": Exp, "log": Log}


def op_forward(op, a, b):
    return np.asarray(FUNCTIONS[op].forward(a, b), dtype=np.float64)


def op_backward(dout, op, a, b, out):
    return FUNCTIONS[op].backward(dout, a, b, out)


class Tape:
    def __init__(self, graph, n_in):
        self.graph, self.n_in = graph, n_in

    def run(self, inputs):
        values = [np.asarray(x, dtype=np.float64) for x in inputs]
        for op, i, j in self.graph:
            values.append(op_forward(op, values[i], values[j] if j >= 0 else None))
        return values

    def backward(self, dout, values):
        grads = [np.zeros_like(np.asarray(v)) for v in values]
        grads[-1] = grads[-1] + dout
        for k in reversed(range(len(self.graph))):
            op, i, j = self.graph[k]
            node = self.n_in + k
            da, db = op_backward(grads[node], op, values[i], values[j] if j >= 0 else None, values[node])
            grads[i] = grads[i] + da
            if j >= 0:
                grads[j] = grads[j] + db
        return grads[:self.n_in]


def tape_forward(graph, inputs):
    return Tape(graph, len(inputs)).run(inputs)


def tape_backward(dout, graph, values):
    return Tape(graph, len(values) - len(graph)).backward(dout, values)
