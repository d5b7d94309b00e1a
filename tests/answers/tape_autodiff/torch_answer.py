# question: tape_autodiff
# A correct answer written with PyTorch's own ops and autograd: the test-only oracle must get
# full marks. The tape is PyTorch's: tape_backward replays the graph on tensors that require
# grad and asks autograd for the vector-Jacobian product.
import numpy as np
import torch

OPS = {"add": torch.add, "mul": torch.mul, "matmul": torch.matmul, "relu": torch.relu,
       "sum": torch.sum, "exp": torch.exp, "log": torch.log}


def _t(a):
    return None if a is None else torch.as_tensor(np.asarray(a, dtype=np.float64))


def op_forward(op, a, b):
    args = (_t(a),) if b is None else (_t(a), _t(b))
    return OPS[op](*args).numpy()


def op_backward(dout, op, a, b, out):
    if b is None:
        _, vjp = torch.func.vjp(OPS[op], _t(a))
        (da,) = vjp(_t(dout))
        return da.numpy(), None
    _, vjp = torch.func.vjp(OPS[op], _t(a), _t(b))
    da, db = vjp(_t(dout))
    return da.numpy(), db.numpy()


def _replay(graph, inputs):
    values = list(inputs)
    for op, i, j in graph:
        values.append(OPS[op](values[i]) if j < 0 else OPS[op](values[i], values[j]))
    return values


def tape_forward(graph, inputs):
    return [v.numpy() for v in _replay(graph, [_t(x) for x in inputs])]


def tape_backward(dout, graph, values):
    n_in = len(values) - len(graph)
    inputs = [_t(v).requires_grad_() for v in values[:n_in]]
    out = _replay(graph, inputs)[-1]
    grads = torch.autograd.grad(out, inputs, grad_outputs=_t(dout), allow_unused=True)
    return [np.zeros(np.shape(v)) if g is None else g.numpy() for v, g in zip(values, grads)]
