# hostile: answers with NaN and infinities, in the right shapes
# base: solution
# expect: at-most 3
# says: NaN or infinite
_max_forward, _avg_forward = maxpool2d_forward, avgpool2d_forward


def maxpool2d_forward(x, kernel_size, stride):
    out, argmax = _max_forward(x, kernel_size, stride)
    return np.full_like(out, np.nan), argmax


def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):
    return np.full(input_shape, np.inf)


def avgpool2d_forward(x, kernel_size, stride):
    return _avg_forward(x, kernel_size, stride) * np.nan


def avgpool2d_backward(dout, input_shape, kernel_size, stride):
    return np.full(input_shape, -np.inf)
