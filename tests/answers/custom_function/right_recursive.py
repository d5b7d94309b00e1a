# expect: full
# A right answer in the style of micrograd: a recursive depth-first sort, then one pass in
# reverse; backward() on top of grad(); the Hessian-vector product as the gradient of g . v,
# written with the Function API itself (Square's backward calls Square-free Tensor ops).
class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return Tensor(np.square(x.data))

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return (x + x) * grad_output


def _topo(t, seen, order):
    if id(t) not in seen:
        seen.add(id(t))
        for p in (t.grad_fn.inputs if t.grad_fn is not None else ()):
            if isinstance(p, Tensor):
                _topo(p, seen, order)
        order.append(t)
    return order


def grad(output, inputs, grad_output=None, create_graph=False):
    g = {id(output): grad_output if grad_output is not None else Tensor(np.ones_like(output.data))}
    with set_grad_enabled(create_graph):
        for t in reversed(_topo(output, set(), [])):
            if t.grad_fn is None or id(t) not in g:
                continue
            shares = as_gradients(t.grad_fn.function.backward(t.grad_fn.ctx, g[id(t)]),
                                  len(t.grad_fn.inputs))
            for p, s in zip(t.grad_fn.inputs, shares):
                if s is not None and isinstance(p, Tensor) and p.requires_grad:
                    g[id(p)] = g[id(p)] + s if id(p) in g else s
    return [g[id(t)] if id(t) in g else Tensor(np.zeros_like(t.data)) for t in inputs]


def backward(output, grad_output=None):
    leaves = [t for t in _topo(output, set(), []) if t.is_leaf and t.requires_grad]
    for leaf, g in zip(leaves, grad(output, leaves, grad_output)):
        leaf.grad = g if leaf.grad is None else g + leaf.grad


class RoundSTE(Function):
    @staticmethod
    def forward(ctx, x):
        return Tensor(np.round(x.data))

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 1.0


def hvp(f, x, v):
    leaf = Tensor(x.data, requires_grad=True)
    (g,) = grad(f(leaf), [leaf], create_graph=True)
    return grad(g, [leaf], grad_output=v)[0]  # the vector-Jacobian product of g with v
