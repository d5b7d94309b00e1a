# Trap stores-everything: right gradients, but the forward pass keeps every layer's input
# (and its packed mask) until the backward pass, whatever segment_size says.
def mlp_loss_and_grads(params, x, y, segment_size):
    L, N = len(params), x.shape[0]
    inputs, masks, h = [], [], x
    for i, (W, b) in enumerate(params):
        inputs.append(h)
        z = h @ W + b
        if i < L - 1:
            h, mask = relu_forward_packed(z)
            masks.append(mask)
        else:
            h = z
    loss = 0.5 * float(np.sum((h - y) ** 2)) / N
    dh = (h - y) / N
    grads = [None] * L
    for i in reversed(range(L)):
        dz = dh if i == L - 1 else relu_backward_packed(dh, masks[i], dh.shape)
        grads[i] = (inputs[i].T @ dz, dz.sum(axis=0))
        dh = dz @ params[i][0].T
    return loss, grads
