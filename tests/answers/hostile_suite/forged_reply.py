# hostile: writes forged "ok" frames straight into the grader's answer pipe, then answers
# the backward wrongly
# base: solution
# expect: at-most 6
import sys

_wire = sys.modules.get("wire")
if _wire is not None:
    _fd = int(sys.argv[1])
    _wire.write_frame(_fd, {"ok": True, "seconds": 0.0})
    _wire.write_frame(_fd, {"ok": True, "value": {"score": 12.0, "passed": True}, "seconds": 0.0})


def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):
    return np.zeros(input_shape)
