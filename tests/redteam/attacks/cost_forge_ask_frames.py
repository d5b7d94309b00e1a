# question: forward_vs_reverse
# Class 2: the bypass answer (@ everywhere) writes raw "ask" frames on the response fd itself,
# through the worker's own wire module (matvec of a zero matrix of each layer's shape), and
# reads the grader's replies off fd 0, so the count reads one pass without any helper.
import os
import sys

import numpy as np

_wire = sys.modules.get("wire")
_resp = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 3


def _forge(As):
    for A in As:
        _wire.write_frame(_resp, {"op": "ask", "name": "matvec", "args": [np.zeros(A.shape), np.zeros(A.shape[1])]})
        _wire.decode(_wire.read_frame_body(lambda n: os.read(0, n), 1 << 30))


def chain_forward(As, x):
    for A in As:
        x = A @ x
    _forge(As)
    return x


def chain_jvp(As, v):
    for A in As:
        v = A @ v
    _forge(As)
    return v


def chain_vjp(As, u):
    for A in reversed(As):
        u = A.T @ u
    _forge(As)
    return u


def jacobian_forward(As):
    columns = [chain_jvp(As, e) for e in np.eye(As[0].shape[1])]
    return np.stack(columns, axis=1)


def jacobian_reverse(As):
    rows = [chain_vjp(As, e) for e in np.eye(As[-1].shape[0])]
    return np.stack(rows, axis=0)
