# question: mlp_backprop
# expect: full
# micrograd style: a scalar Value with a _backward closure per op and a topological sort;
# the MLP is built from Values and the gradients are read off after backward(). Slow, exact.
import numpy as np


class Value:
    def __init__(self, data, _children=()):
        self.data, self.grad = float(data), 0.0
        self._backward = lambda: None
        self._prev = set(_children)

    def __add__(self, other):
        out = Value(self.data + other.data, (self, other))

        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out

    def __mul__(self, other):
        out = Value(self.data * other.data, (self, other))

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out

    def relu(self):
        out = Value(self.data if self.data > 0 else 0.0, (self,))

        def _backward():
            self.grad += (out.data > 0) * out.grad
        out._backward = _backward
        return out

    def backward(self, roots):
        topo, visited = [], set()

        def build(v):
            if v not in visited:
                visited.add(v)
                for child in v._prev:
                    build(child)
                topo.append(v)
        for r in roots:
            build(r)
        for v in reversed(topo):
            v._backward()


def _values(a):
    return [[Value(v) for v in row] for row in np.atleast_2d(a)]


def _layer(inputs, W, b, relu):
    outs = []
    for row in inputs:
        o = []
        for j in range(len(b[0])):
            acc = b[0][j]
            for k in range(len(row)):
                acc = acc + row[k] * W[k][j]
            o.append(acc.relu() if relu else acc)
        outs.append(o)
    return outs


def mse_loss(out, y):
    n = out.shape[0]
    return 0.5 * float(np.sum((out - y) ** 2)) / n, (out - y) / n


def mlp_forward(x, W1, b1, W2, b2):
    z = x @ W1 + b1
    h = np.maximum(z, 0.0)
    return h @ W2 + b2, h, z


def mlp_backward(dout, x, z, h, W1, W2):
    X, V1, C1, V2 = _values(x), _values(W1), _values(np.zeros(W1.shape[1])), _values(W2)
    # b1 is found from the saved z: z = x W1 + b1, any row will do
    b1 = z[0] - x[0] @ W1
    C1 = [[Value(v) for v in b1]]
    C2 = [[Value(0.0) for _ in range(W2.shape[1])]]
    H = _layer(X, V1, C1, relu=True)
    O = _layer(H, V2, C2, relu=False)
    roots = []
    for i, row in enumerate(O):
        for j, o in enumerate(row):
            o.grad = float(dout[i, j])
            roots.append(o)
    roots[0].backward(roots)
    grad = lambda M: np.array([[v.grad for v in row] for row in M])  # noqa: E731
    return grad(X), grad(V1), grad(C1)[0], grad(V2), grad(C2)[0]
