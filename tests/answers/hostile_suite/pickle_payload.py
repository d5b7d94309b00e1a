# hostile: answers with a pickle whose loading would run a command, as bytes, as a byte
# array, and as an object array
# base: solution
# expect: at-most 6
# says: cannot be returned
import os
import pickle


class _Boom:
    def __reduce__(self):
        return (os.system, ("touch /tmp/backprop-traps-pwned",))


_PAYLOAD = pickle.dumps(_Boom())


def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):
    return _PAYLOAD


def avgpool2d_forward(x, kernel_size, stride):
    return np.array([_Boom()], dtype=object)


def avgpool2d_backward(dout, input_shape, kernel_size, stride):
    return np.frombuffer(_PAYLOAD, dtype=np.uint8)
