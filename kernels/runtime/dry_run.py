"""A dry run: the host code of the kernels at any size, with no memory and no kernel run.

Inside ``with dry_run() as run:``
  - ``cuda.device_array``, ``cuda.to_device`` and ``cuda.device_array_like`` return ``ShapeOnly``
    stand-ins: a shape and a dtype, no data, so an 80 GB case costs nothing; ``run.allocated``
    adds up the bytes a GPU would have had to hold;
  - ``kernel[grid, block](...)`` records a ``Launch`` (the kernel, the function that launched
    it, the grid and block) and runs nothing; ``run.refused`` lists the launches a GPU refuses
    (kernels/runtime/launch_limits.py).
The benchmark's cases (kernels/cases/) build their arrays through ``Arrays``, which yields
stand-ins in a dry run, so every case can be "launched" at its LARGE and HUGE sizes:
tests/kernels/test_launch_limits.py does exactly that. Anything that needs the data itself
(a copy to the host that is then computed on) raises ``DryRunError`` with a sentence.
Works under the simulator and with the real numba-cuda dispatcher alike (no GPU needed).
"""
from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field

import numpy as np

from backprop_traps.kernels.runtime import launch_limits


class DryRunError(TypeError):
    """Host code asked a dry run's stand-in for data it does not hold."""


class ShapeOnly:
    """A (device or host) array with a shape and a dtype and no memory."""

    __array_priority__ = 1000

    def __init__(self, shape, dtype):
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)

    # the attributes host code reads
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))
    itemsize = property(lambda self: self.dtype.itemsize)
    nbytes = property(lambda self: self.size * self.dtype.itemsize)
    T = property(lambda self: ShapeOnly(self.shape[::-1], self.dtype))

    @property
    def strides(self):
        strides, step = [], self.dtype.itemsize
        for s in reversed(self.shape):
            strides.append(step)
            step *= s
        return tuple(reversed(strides))

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        return f"ShapeOnly({self.shape}, {self.dtype})"

    def __getitem__(self, index):  # numpy's own indexing rules, on a view with no memory
        return ShapeOnly(np.broadcast_to(np.zeros((), np.uint8), self.shape)[index].shape, self.dtype)

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)) else shape
        return ShapeOnly(np.broadcast_to(np.zeros((), np.uint8), self.size).reshape(shape).shape, self.dtype)

    def ravel(self):
        return ShapeOnly(self.size, self.dtype)

    def astype(self, dtype, copy=True, **_):
        return ShapeOnly(self.shape, dtype)

    def copy(self):
        return ShapeOnly(self.shape, self.dtype)

    def copy_to_host(self, ary=None, stream=0):
        return self.copy()

    def copy_to_device(self, ary, stream=0):
        return None

    def __array__(self, *args, **kwargs):
        raise DryRunError(f"a dry run's stand-in {self!r} holds no data: host code that computes on "
                          "a kernel's output cannot run in a dry run (keep it out of the launch path)")

    def _no_data(self, *args, **kwargs):
        raise DryRunError(f"a dry run's stand-in {self!r} holds no data")

    __float__ = __int__ = __bool__ = __iter__ = _no_data


@dataclass
class Launch:
    kernel: str          # module.function of the kernel
    caller: str          # module.function that launched it
    grid: tuple
    block: tuple
    shared: int = 0
    elements: int = 0    # the size of its largest array argument

    def problems(self) -> list[str]:
        return launch_limits.problems(self.grid, self.block, self.shared)

    def __str__(self):
        return f"{self.kernel}[grid {self.grid}, block {self.block}] from {self.caller}"


@dataclass
class DryRun:
    launches: list = field(default_factory=list)
    allocated: int = 0   # bytes of device arrays made (to_device and device_array)

    @property
    def refused(self) -> list[str]:
        return [f"{launch}: {'; '.join(launch.problems())}" for launch in self.launches if launch.problems()]


class _DryLaunch:
    """What ``kernel[grid, block]`` returns in a dry run: calling it records, runs nothing."""

    def __init__(self, run, py_func, grid, block, shared):
        self.run, self.py_func = run, py_func
        self.grid, self.block, self.shared = launch_limits.dims(grid), launch_limits.dims(block), int(shared or 0)

    def __call__(self, *args):
        caller = sys._getframe(1)
        module = caller.f_globals.get("__name__", "?").removeprefix("backprop_traps.kernels.").removeprefix("common.")
        elements = max((a.size for a in args if isinstance(a, ShapeOnly) and a.ndim), default=1)
        self.run.launches.append(Launch(launch_limits.kernel_name(self.py_func),
                                        f"{module}.{caller.f_code.co_name}", self.grid, self.block, self.shared,
                                        elements))


_active: list = []


@contextlib.contextmanager
def dry_run():
    """Stand-ins for device arrays and recorded launches, undone on exit (not re-entrant)."""
    from backprop_traps.kernels.runtime.device import cuda
    if _active:
        raise RuntimeError("dry runs do not nest")
    run = DryRun()
    saved = []

    def patch(owner, name, value):
        saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def device_array(shape, dtype=np.float64, *args, **kwargs):
        array = ShapeOnly(shape, dtype)
        run.allocated += array.nbytes
        return array

    def to_device(obj, stream=0, copy=True, to=None):
        if to is not None:
            return to
        shape, dtype = (obj.shape, obj.dtype) if hasattr(obj, "dtype") else (np.shape(obj), np.asarray(obj).dtype)
        return device_array(shape, dtype)

    def getitem(self, configuration):  # kernel[grid, block(, stream, shared)]
        configuration = configuration if isinstance(configuration, tuple) else (configuration,)
        if len(configuration) not in (2, 3, 4):
            raise ValueError("a launch takes 2 to 4 values: grid, block, stream, shared memory")
        return _DryLaunch(run, self.py_func, configuration[0], configuration[1],
                          configuration[3] if len(configuration) == 4 else 0)

    patch(cuda, "device_array", device_array)
    patch(cuda, "to_device", to_device)
    patch(cuda, "device_array_like", lambda ary, stream=0: device_array(ary.shape, ary.dtype))
    for dispatcher in _dispatcher_classes():
        patch(dispatcher, "__getitem__", getitem)
    _active.append(run)
    try:
        yield run
    finally:
        _active.pop()
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)


def _dispatcher_classes():
    """The class whose ``[grid, block]`` starts a launch, whichever backend kernels/runtime/device.py
    chose (the simulator's FakeCUDAKernel, numba-cuda's CUDADispatcher, numba-cuda-mlir's):
    the type of a kernel made here, never compiled nor launched."""
    from backprop_traps.kernels.runtime.device import cuda
    return [type(cuda.jit(_never_launched))]


def _never_launched(out):
    out[0] = 0
