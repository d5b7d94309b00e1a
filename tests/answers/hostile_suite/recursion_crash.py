# hostile: lifts the recursion limit and overflows the C stack (a segfault, not an exception)
# base: solution
# expect: at-most 10
# says: killed by SIGSEGV
import json
import sys

sys.setrecursionlimit(10**8)


def avgpool2d_backward(dout, input_shape, kernel_size, stride):
    return json.loads("[" * 300_000 + "]" * 300_000)
