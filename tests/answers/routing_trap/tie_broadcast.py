# Trap tie-broadcast: the backward peeks at the x cached by the forward and routes the
# gradient to every input equal to the window's max.
_cache = {}
_forward = maxpool2d_forward


def maxpool2d_forward(x, kernel_size, stride):
    _cache["x"] = x
    return _forward(x, kernel_size, stride)


def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):
    x, k, s = _cache["x"], kernel_size, stride
    out, _ = _forward(x, k, s)
    dx = np.zeros(input_shape)
    ho, wo = out.shape[2:]
    for i in range(ho):
        for j in range(wo):
            win = x[:, :, i * s:i * s + k, j * s:j * s + k]
            hit = win == out[:, :, i:i + 1, j:j + 1]
            dx[:, :, i * s:i * s + k, j * s:j * s + k] += hit * dout[:, :, i:i + 1, j:j + 1]
    return dx
