"""Three fixes to the Numba CUDA simulator (numba-cuda 0.30): a lock around its shared-array
allocation, the warp shuffle it lacks, and the interpreter's switch interval.

1. The lock.
``FakeCUDAShared.array`` looks up the array for a call site and creates it when missing,
with no lock: two simulated threads of one block can both miss, each get a private array,
and one thread's writes vanish from the block's reduction. It shows up as a rare, load-
dependent wrong sum in tree reductions. Same logic as upstream, under a lock. Installed
whenever the simulator is chosen (kernels/runtime/device.py, on its import): the test suite, the
benchmark's simulator smoke pass and ``python -m backprop_traps.kernels.<id>`` all get it.

2. ``cuda.shfl_down_sync(mask, value, delta)`` and ``cuda.shfl_xor_sync(mask, value, lane_mask)``:
the simulator has no warp shuffles, which the fast kernels' reductions use (kernels/common/patterns.py).
Here the 32 lanes of a warp (32 consecutive threads of the block) meet at a barrier, post their
values, meet again once each has read lane + delta's, or lane ^ lane_mask's (its own where
lane + delta is past the warp, as a GPU answers).
What a GPU leaves undefined is refused, with an error, not simulated (issue 45):
- a shuffle in a partial warp (the last warp of a block whose threads are not a multiple of
  32): the full mask names lanes that do not exist;
- any mask but the full one (0xFFFFFFFF): the kernels here shuffle whole warps only, and a
  partial mask's lanes would have to be the very lanes that call it;
- a lane that never comes (it returned early) breaks the barrier within WARP_TIMEOUT seconds:
  the full mask names it.

3. The switch interval. The simulator runs each CUDA thread as a Python thread, so how often
the interpreter hands the GIL over decides its speed: too long and a barrier waits for every
thread's slice in turn, too short and a 256-thread tile kernel spends its time switching.
benchmarks/simulator_speed.py times it (benchmarks/results/simulator_speed.md): 1 ms beat
both 0.1 ms and Python's 5 ms.
"""
import sys
import threading
import traceback

import numpy as np


SWITCH_INTERVAL = 1e-3  # seconds (3. above)


def install():
    sys.setswitchinterval(SWITCH_INTERVAL)
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
    kernelapi.FakeCUDAModule.shfl_down_sync = staticmethod(shfl_down_sync)
    kernelapi.FakeCUDAModule.shfl_xor_sync = staticmethod(shfl_xor_sync)


WARP_TIMEOUT = 120.0  # seconds: the simulator runs a block's threads as Python threads on a busy CPU
_warps_lock = threading.Lock()


FULL_MASK = 0xFFFFFFFF
WARP = 32


def shfl_down_sync(mask, value, delta):
    """The simulator's warp shuffle: lane + delta's value (see the module's docstring)."""
    return _exchange(mask, value, lambda lane: lane + delta)


def shfl_xor_sync(mask, value, lane_mask):
    """The simulator's butterfly shuffle: lane ^ lane_mask's value."""
    return _exchange(mask, value, lambda lane: lane ^ lane_mask)


class WarpShuffleError(RuntimeError):
    """A warp shuffle whose result a GPU leaves undefined."""


def _exchange(mask, value, source):
    """Post this lane's value, read lane source(lane)'s (its own past the warp), then meet again."""
    me = threading.current_thread()
    manager, lane, warp = me._manager, me.thread_id % WARP, me.thread_id // WARP
    threads = int(np.prod(manager._block_dim))
    if int(mask) != FULL_MASK:
        raise WarpShuffleError(f"warp shuffle with mask {int(mask):#x}: the simulator takes only the full mask "
                               f"{FULL_MASK:#x} (whole warps), the only one these kernels may use")
    if threads % WARP and warp == threads // WARP:  # the block's last warp, short of lanes
        raise WarpShuffleError(f"warp shuffle in a partial warp: a block of {threads} threads leaves warp "
                               f"{threads // WARP} with {threads % WARP} lanes, and the full mask names 32, so a "
                               "GPU's result is undefined: launch whole warps (a multiple of 32 threads)")
    with _warps_lock:
        warps = manager.__dict__.setdefault("_warps", {})
        state = warps.get((tuple(me.blockIdx), warp))
        if state is None:
            state = warps[(tuple(me.blockIdx), warp)] = (threading.Barrier(WARP, timeout=WARP_TIMEOUT), [None] * WARP)
    barrier, slots = state
    try:
        slots[lane] = value
        barrier.wait()
        other = source(lane)
        result = slots[other] if 0 <= other < len(slots) else value
        barrier.wait()
    except threading.BrokenBarrierError:
        raise RuntimeError(f"warp shuffle: a lane of warp {warp} in block {tuple(me.blockIdx)} never reached "
                           "the shuffle (did it return early?)") from None
    return result
