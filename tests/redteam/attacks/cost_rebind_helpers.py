# question: forward_vs_reverse
# base: solution
# Class 2: at call time, rebind the counted helpers (matvec, vecmat, matmul,
# take_multiply_adds) to local ones that count whatever the learner likes, then run the
# solution's code through them with @ underneath.
import numpy as np

_fake = {"count": 0}


def _rebind():
    g = globals()
    g["matvec"] = lambda A, v: A @ v
    g["vecmat"] = lambda u, A: u @ A
    g["matmul"] = lambda A, B: A @ B
    g["take_multiply_adds"] = lambda: sum(A.size for A in _fake.get("As", []))
    import builtins
    builtins.matvec = g["matvec"]


_solution_jvp, _solution_vjp, _solution_forward = chain_jvp, chain_vjp, chain_forward


def chain_forward(As, x):
    _rebind()
    return _solution_forward(As, x)


def chain_jvp(As, v):
    _rebind()
    return _solution_jvp(As, v)


def chain_vjp(As, u):
    _rebind()
    return _solution_vjp(As, u)
