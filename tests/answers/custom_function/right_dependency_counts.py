# expect: full
# A right answer whose walk orders the tape itself (Kahn's algorithm): count how many nodes read
# each tensor, and release a tensor to the queue when its last reader has passed its share back.
class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return Tensor(x.data ** 2)

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        return 2.0 * (x * dy)


def _tensors(output):
    seen, stack, found = set(), [output], []
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        found.append(t)
        if t.grad_fn is not None:
            stack.extend(p for p in t.grad_fn.inputs if isinstance(p, Tensor))
    return found


def grad(output, inputs, grad_output=None, create_graph=False):
    readers = {}
    for t in _tensors(output):
        if t.grad_fn is not None:
            for p in t.grad_fn.inputs:
                if isinstance(p, Tensor):
                    readers[id(p)] = readers.get(id(p), 0) + 1
    grads = {id(output): Tensor(np.ones(output.shape)) if grad_output is None else grad_output}
    ready = [output]
    with set_grad_enabled(create_graph):
        while ready:
            t = ready.pop()
            if t.grad_fn is None:
                continue
            shares = t.grad_fn.function.backward(t.grad_fn.ctx, grads[id(t)])
            if not isinstance(shares, tuple):
                shares = (shares,)
            for p, share in zip(t.grad_fn.inputs, shares):
                if not isinstance(p, Tensor):
                    continue
                if share is not None and p.requires_grad:
                    grads[id(p)] = grads[id(p)] + share if id(p) in grads else share
                readers[id(p)] -= 1
                if readers[id(p)] == 0 and id(p) in grads:
                    ready.append(p)
    return [grads.get(id(t), Tensor(np.zeros(t.shape))) for t in inputs]


def backward(output, grad_output=None):
    leaves = [t for t in _tensors(output) if t.grad_fn is None and t.requires_grad]
    for leaf, g in zip(leaves, grad(output, leaves, grad_output)):
        if leaf.grad is None:
            leaf.grad = g
        else:
            leaf.grad = leaf.grad + g


class RoundSTE(Function):
    @staticmethod
    def forward(ctx, x):
        return Tensor(np.rint(x.data))

    @staticmethod
    def backward(ctx, dy):
        return dy


def hvp(f, x, v):
    x = x.detach()
    x.requires_grad = True
    g = grad(f(x), [x], create_graph=True)[0]
    return grad((g * v).sum(), [x])[0]
