# hostile: answers the backward with 272 MB (over the 256 MB answer limit, and near the
# suite's memory cap)
# base: solution
# expect: at-most 6


def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):
    return np.zeros(34 * 1024 * 1024)
