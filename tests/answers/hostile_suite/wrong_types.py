# hostile: answers with a string, nested lists, None and a generator
# base: none
# expect: at-most 1
# says: must return
def maxpool2d_forward(x, kernel_size, stride):
    return "out, argmax"


def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):
    return [[0.0] * 3] * 2


def avgpool2d_forward(x, kernel_size, stride):
    return None


def avgpool2d_backward(dout, input_shape, kernel_size, stride):
    return (i for i in range(3))
