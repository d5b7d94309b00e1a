# expect: wrong
# not named: stores-everything cross-term-dropped
# The stack's loss and gradients without the 1 / N of the batch.
_stack = revnet_loss_and_grads


def revnet_loss_and_grads(blocks, x1, x2, t1, t2):
    loss, grads = _stack(blocks, x1, x2, t1, t2)
    N = x1.shape[0]
    return loss * N, [tuple(g * N for g in per_block) for per_block in grads]
