# Leaves processes behind, one of them in its own session (out of the process group).
import os
import time

if os.fork() == 0:
    time.sleep(300)
    os._exit(0)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(300)
    os._exit(0)
