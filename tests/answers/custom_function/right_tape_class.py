# expect: full
# A right answer organised as a small class that owns one walk: the gradients live in a dict
# on the walker, backward() and grad() are thin wrappers, and .grad is written only by
# backward(), on a detached copy when the walk was not recorded.
class _Walk:
    def __init__(self, output, grad_output, create_graph):
        self.record = create_graph
        self.grads = {id(output): grad_output if grad_output is not None else Tensor(np.ones_like(output.data))}
        self.order = reverse_topological(output)

    def run(self):
        with set_grad_enabled(self.record):
            for t in self.order:
                node, g = t.grad_fn, self.grads.get(id(t))
                if node is None or g is None:
                    continue
                for p, s in zip(node.inputs, as_gradients(node.function.backward(node.ctx, g), len(node.inputs))):
                    if s is None or not isinstance(p, Tensor) or not p.requires_grad:
                        continue
                    self.grads[id(p)] = s if id(p) not in self.grads else self.grads[id(p)] + s
        return self

    def of(self, t):
        return self.grads.get(id(t)) or Tensor(np.zeros_like(t.data))


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return Tensor(x.data * x.data)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return x * grad_output * 2


def grad(output, inputs, grad_output=None, create_graph=False):
    walk = _Walk(output, grad_output, create_graph).run()
    return [walk.of(t) for t in inputs]


def backward(output, grad_output=None):
    walk = _Walk(output, grad_output, False).run()
    for t in walk.order:
        if t.is_leaf and t.requires_grad and id(t) in walk.grads:
            g = walk.grads[id(t)].detach()
            t.grad = g if t.grad is None else t.grad + g


class RoundSTE(Function):
    @staticmethod
    def forward(ctx, x):
        return Tensor(np.round(x.data))

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


def hvp(f, x, v):
    x = Tensor(x.data, requires_grad=True)
    g = grad(f(x), [x], create_graph=True)[0]
    return grad((g * v).sum(), [x])[0].detach()
