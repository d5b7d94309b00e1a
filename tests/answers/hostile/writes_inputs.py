# Answers right but scribbles over its inputs afterwards.
_forward, _backward = maxpool2d_forward, maxpool2d_backward


def maxpool2d_forward(x, kernel_size, stride):
    result = _forward(x, kernel_size, stride)
    x[...] = 0
    return result


def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):
    dx = _backward(dout, argmax, input_shape, kernel_size, stride)
    dout[...] = 0
    argmax[...] = 0
    return dx
