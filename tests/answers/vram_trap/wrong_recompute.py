# Trap wrong-recompute: the checkpoint is saved after its layer has run, so every segment is
# recomputed from the output of its first layer instead of its input (one layer too far).
def mlp_loss_and_grads(params, x, y, segment_size):
    L, N = len(params), x.shape[0]

    def layer(i, h):
        W, b = params[i]
        z = h @ W + b
        return (z, None) if i == L - 1 else relu_forward_packed(z)

    checkpoints, h = {}, x
    for i in range(L):
        h, _ = layer(i, h)
        if i % segment_size == 0:
            checkpoints[i] = h          # too late: this is the input of layer i + 1
    loss = 0.5 * float(np.sum((h - y) ** 2)) / N
    dh = (h - y) / N
    grads = [None] * L
    for start in reversed(range(0, L, segment_size)):
        stop = min(start + segment_size, L)
        inputs, masks = [checkpoints.pop(start)], []
        for i in range(start, stop):
            out, mask = layer(i, inputs[-1])
            inputs.append(out)
            masks.append(mask)
        for i in reversed(range(start, stop)):
            mask = masks[i - start]
            dz = dh if mask is None else relu_backward_packed(dh, mask, dh.shape)
            grads[i] = (inputs[i - start].T @ dz, dz.sum(axis=0))
            dh = dz @ params[i][0].T
    return loss, grads
