# hostile: right answers, but every call sleeps just under the per-call limit (the suite's
# --call-timeout 1), so only the total limit can stop it
# base: solution
# expect: at-most 10
# says: total time limit
import functools
import time


def _slow(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        time.sleep(0.8)
        return fn(*args)
    return wrapper


maxpool2d_forward = _slow(maxpool2d_forward)
maxpool2d_backward = _slow(maxpool2d_backward)
avgpool2d_forward = _slow(avgpool2d_forward)
avgpool2d_backward = _slow(avgpool2d_backward)
