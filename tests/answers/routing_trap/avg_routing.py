# Trap avg-routing: max-pool backward spreads the gradient over the window like average pooling.
def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):
    return avgpool2d_backward(dout, input_shape, kernel_size, stride)
