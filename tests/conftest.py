"""Test-wide set-up.

Kernel tests run under the Numba CUDA simulator unless BACKPROP_TRAPS_REAL_GPU=1 is set
(then the same tests run on the real device). The simulator must be chosen before
numba.cuda is first imported, so it is set here, at collection time.
"""
import os
import sys

REAL_GPU = os.environ.get("BACKPROP_TRAPS_REAL_GPU") == "1"
if not REAL_GPU:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    # The simulator runs every CUDA thread as a Python thread and syncs them at each
    # barrier; a short switch interval makes barrier-heavy kernels much faster.
    sys.setswitchinterval(1e-4)
