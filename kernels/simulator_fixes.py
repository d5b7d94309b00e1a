"""A lock around the Numba CUDA simulator's shared-array allocation (numba-cuda 0.30).

``FakeCUDAShared.array`` looks up the array for a call site and creates it when missing,
with no lock: two simulated threads of one block can both miss, each get a private array,
and one thread's writes vanish from the block's reduction. It shows up as a rare, load-
dependent wrong sum in tree reductions. Same logic as upstream, under a lock. Installed
whenever the simulator is chosen (kernels/device.py, on its import): the test suite, the
benchmark's simulator smoke pass and ``python -m backprop_traps.kernels.<id>`` all get it.
"""
import sys
import threading
import traceback

import numpy as np


def install():
    from numba.cuda.simulator import kernelapi
    from numba.np import numpy_support
    from numba.core import types

    original = kernelapi.FakeCUDAShared.array
    if getattr(original, "_locked", False):
        return
    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:
            return original(self, shape, dtype, alignment)
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        caller = traceback.extract_stack(sys._getframe())[-2][0:2]  # the kernel's line
        with lock:
            res = self._allocations.get(caller)
            if res is None:
                res = self._allocations[caller] = np.empty(shape, dtype)
        return res

    array._locked = True
    kernelapi.FakeCUDAShared.array = array
