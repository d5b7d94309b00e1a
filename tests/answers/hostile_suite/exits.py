# hostile: leaves by KeyboardInterrupt in one function and os._exit(3) in another
# base: solution
# expect: at-most 10
# says: raised KeyboardInterrupt
import os


def maxpool2d_forward(x, kernel_size, stride):
    raise KeyboardInterrupt


def avgpool2d_backward(dout, input_shape, kernel_size, stride):
    os._exit(3)
