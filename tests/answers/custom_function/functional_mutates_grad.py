# Trap functional-mutates-grad: grad() is backward() followed by a read of .grad, so it adds
# onto whatever .grad held and leaves its result there (and knows no create_graph, and no
# tensor inside the graph).
def backward(output, grad_output=None):
    pending = {id(output): grad_output if grad_output is not None else Tensor(np.ones_like(output.data))}
    for t in reverse_topological(output):
        g = pending.get(id(t))
        if g is None:
            continue
        if t.grad_fn is None:
            if t.requires_grad:
                t.grad = g if t.grad is None else t.grad + g
            continue
        with set_grad_enabled(False):
            shares = as_gradients(t.grad_fn.function.backward(t.grad_fn.ctx, g), len(t.grad_fn.inputs))
        for parent, share in zip(t.grad_fn.inputs, shares):
            if isinstance(parent, Tensor) and parent.requires_grad and share is not None:
                pending[id(parent)] = share if id(parent) not in pending else pending[id(parent)] + share


def grad(output, inputs, grad_output=None, create_graph=False):
    backward(output, grad_output)
    return [t.grad for t in inputs]
