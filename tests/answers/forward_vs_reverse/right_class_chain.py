# question: forward_vs_reverse
# expect: full
# A LinearChain object with jvp / vjp methods (the JAX-style pair), Jacobians built by
# pushing or pulling basis vectors; every product goes through the counted helpers.
import numpy as np


class LinearChain:
    def __init__(self, As):
        self.layers = list(As)
        self.n_in, self.n_out = self.layers[0].shape[1], self.layers[-1].shape[0]

    def __call__(self, x):
        return self.jvp(x)  # linear: the map and its JVP are one and the same

    def jvp(self, tangent):
        for A in self.layers:
            tangent = matvec(A, tangent)
        return tangent

    def vjp(self, cotangent):
        for A in reversed(self.layers):
            cotangent = vecmat(cotangent, A)
        return cotangent

    def jacfwd(self):
        cols = [self.jvp(np.eye(self.n_in)[j]) for j in range(self.n_in)]
        return np.stack(cols, axis=1)

    def jacrev(self):
        rows = [self.vjp(np.eye(self.n_out)[i]) for i in range(self.n_out)]
        return np.stack(rows, axis=0)


def chain_forward(As, x):
    return LinearChain(As)(x)


def chain_jvp(As, v):
    return LinearChain(As).jvp(v)


def chain_vjp(As, u):
    return LinearChain(As).vjp(u)


def jacobian_forward(As):
    return LinearChain(As).jacfwd()


def jacobian_reverse(As):
    return LinearChain(As).jacrev()
