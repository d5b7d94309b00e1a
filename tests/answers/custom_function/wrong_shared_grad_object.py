# expect: wrong
# backward() hands a leaf the gradient object grad() returned, and adds into it in place later:
# for y = x0 + x1 both leaves get one Tensor, so a second call adds twice into it (3 g, not 2 g).
def backward(output, grad_output=None):
    leaves = [t for t in reverse_topological(output) if t.is_leaf and t.requires_grad]
    for leaf, g in zip(leaves, grad(output, leaves, grad_output)):
        if leaf.grad is None:
            leaf.grad = g
        else:
            leaf.grad.data += g.data
