# hostile: raises an exception whose message never finishes printing
# base: solution
# expect: at-most 10
# says: did not finish within


class _Unprintable(Exception):
    def __str__(self):
        while True:
            pass


def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):
    raise _Unprintable()
