# expect: unnamed
# says: not on the tape
# grad() always walks with recording off: its gradients are right but constants, so nothing can
# differentiate them again (the second-order checks and hvp fail, with no trap to name).
_grad = grad


def grad(output, inputs, grad_output=None, create_graph=False):
    return _grad(output, inputs, grad_output, False)
