# hostile: forks 50 children that sleep for five minutes (bounded: a real fork bomb would
# starve the test machine; the sandbox has no process-count limit for root). They name
# themselves bpt-hostile so the test can tell whether any outlived the grading.
# base: solution
# expect: full
import ctypes
import os
import time

for _ in range(50):
    if os.fork() == 0:
        ctypes.CDLL(None).prctl(15, b"bpt-hostile", 0, 0, 0)  # PR_SET_NAME
        if os.fork() == 0:  # and one grandchild each, in a session of its own
            os.setsid()
            ctypes.CDLL(None).prctl(15, b"bpt-hostile", 0, 0, 0)
        time.sleep(300)
        os._exit(0)
