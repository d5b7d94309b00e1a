# Trap grad-overwritten: backward() assigns each leaf's .grad instead of adding to it, so a
# second call (or a .grad already there) is lost.
def backward(output, grad_output=None):
    leaves = [t for t in reverse_topological(output) if t.is_leaf and t.requires_grad]
    for leaf, g in zip(leaves, grad(output, leaves, grad_output)):
        leaf.grad = g
