# Trap stores-everything: the stack keeps every block's inputs for its backward, as plain
# backpropagation would: right gradients, memory that grows with the number of blocks.
def revnet_loss_and_grads(blocks, x1, x2, t1, t2):
    pairs = [(x1, x2)]
    for block in blocks:
        pairs.append(rev_forward(*pairs[-1], *block))
    y1, y2 = pairs[-1]
    N = y1.shape[0]
    loss = 0.5 * (np.sum((y1 - t1) ** 2) + np.sum((y2 - t2) ** 2)) / N
    dy1, dy2 = (y1 - t1) / N, (y2 - t2) / N
    grads = [None] * len(blocks)
    for i in reversed(range(len(blocks))):
        _, _, dy1, dy2, *g = rev_backward(dy1, dy2, *pairs[i + 1], *blocks[i])
        grads[i] = tuple(g)
    return float(loss), grads
