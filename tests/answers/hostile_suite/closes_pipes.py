# hostile: closes the grader's request and answer pipes from inside a call
# base: solution
# expect: at-most 6
# says: crashed the Python process
import os
import sys


def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):
    os.close(int(sys.argv[1]))
    os.close(0)
    return np.zeros(input_shape)
