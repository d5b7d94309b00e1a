# expect: wrong
# not named: grad-overwritten functional-mutates-grad
# backward() accumulates into the .grad of every tensor on the tape, intermediate ones and
# leaves that do not require grad included.
def backward(output, grad_output=None):
    tensors = reverse_topological(output)
    for t, g in zip(tensors, grad(output, tensors, grad_output)):
        t.grad = g if t.grad is None else t.grad + g
