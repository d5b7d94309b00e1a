# expect: wrong
# not named: functional-mutates-grad grad-overwritten
# grad() keeps gradients for leaves only: asked for a tensor inside the graph, it returns zeros.
_grad = grad


def grad(output, inputs, grad_output=None, create_graph=False):
    got = _grad(output, inputs, grad_output, create_graph)
    return [g if t.is_leaf else Tensor(np.zeros_like(t.data)) for t, g in zip(inputs, got)]
