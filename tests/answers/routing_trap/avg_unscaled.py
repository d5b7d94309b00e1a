# Trap avg-unscaled: average-pool backward forgets to divide by the window size.
_avg_backward = avgpool2d_backward


def avgpool2d_backward(dout, input_shape, kernel_size, stride):
    return _avg_backward(dout, input_shape, kernel_size, stride) * kernel_size * kernel_size
