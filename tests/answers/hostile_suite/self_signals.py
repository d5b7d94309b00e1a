# hostile: kills itself, with SIGABRT in one function and SIGKILL in another
# base: solution
# expect: at-most 10
# says: killed by SIGABRT
import os
import signal


def avgpool2d_forward(x, kernel_size, stride):
    os.abort()


def avgpool2d_backward(dout, input_shape, kernel_size, stride):
    signal.raise_signal(signal.SIGKILL)
