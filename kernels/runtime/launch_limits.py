"""The launches a GPU refuses, checked on the host: CUDA's limits on a kernel's grid and block.

A launch past these fails on a GPU with CUDA_ERROR_INVALID_VALUE, but Numba's CUDA simulator
runs it anyway (it walks the grid in Python), so a grid of ceil(N / 4) blocks along y ran in
CI at any N and crashed on a GPU at N = 524,288. ``install()`` wraps the simulator's launch
(``FakeCUDAKernel.__getitem__``, the one place every simulated kernel gets its grid), so in
CI such a launch raises ``LaunchLimitError`` whatever module the kernel came from. The
dry run (kernels/runtime/dry_run.py) checks the same limits at sizes the simulator could never run.

The limits, compute capability 7.0 to 12.x (the CUDA C++ Programming Guide's table of
technical specifications):
  grid:  x <= 2**31 - 1, y and z <= 65,535, each at least 1
  block: x and y <= 1,024, z <= 64, x * y * z <= 1,024
  shared memory: 48 KiB per block without an opt-in (numba-cuda opts in to nothing), static and
  dynamic together. The static part is known only to the compiler: benchmarks/kernels_static.py
  reads it from ptxas and holds it to the same bound, and to registers * threads <= 65,536.
"""
from __future__ import annotations

MAX_GRID = (2 ** 31 - 1, 65_535, 65_535)
MAX_BLOCK = (1_024, 1_024, 64)
MAX_THREADS_PER_BLOCK = 1_024
MAX_SHARED_BYTES = 48 * 1024
REGISTERS_PER_SM = 65_536  # a block's threads * registers per thread must fit one SM's file


class LaunchLimitError(ValueError):
    """A launch configuration that a GPU refuses."""


def dims(value) -> tuple[int, int, int]:
    """A grid or block as numba takes it (an int, or a tuple of 1 to 3 ints) -> (x, y, z)."""
    value = (value,) if isinstance(value, int) or hasattr(value, "__index__") else tuple(value)
    if not 1 <= len(value) <= 3:
        raise LaunchLimitError(f"a grid or block has 1 to 3 dimensions, not {len(value)}: {value}")
    return tuple(int(v) for v in value) + (1,) * (3 - len(value))


def problems(grid, block, shared_bytes: int = 0) -> list[str]:
    """What a GPU would refuse in this configuration, one phrase each (empty when nothing)."""
    grid, block = dims(grid), dims(block)
    found = []
    for axis, size, limit in zip("xyz", grid, MAX_GRID):
        if size < 1:
            found.append(f"grid {axis} is {size} (at least 1 block)")
        elif size > limit:
            found.append(f"grid {axis} is {size:,} blocks, over CUDA's {limit:,}")
    for axis, size, limit in zip("xyz", block, MAX_BLOCK):
        if size < 1:
            found.append(f"block {axis} is {size} (at least 1 thread)")
        elif size > limit:
            found.append(f"block {axis} is {size:,} threads, over CUDA's {limit:,}")
    threads = block[0] * block[1] * block[2]
    if threads > MAX_THREADS_PER_BLOCK:
        found.append(f"{threads:,} threads per block, over CUDA's {MAX_THREADS_PER_BLOCK:,}")
    if shared_bytes > MAX_SHARED_BYTES:
        found.append(f"{shared_bytes:,} B of dynamic shared memory, over {MAX_SHARED_BYTES:,}")
    return found


def check(kernel: str, grid, block, shared_bytes: int = 0) -> None:
    """Raise LaunchLimitError, naming the kernel and the limit, for a launch a GPU refuses."""
    found = problems(grid, block, shared_bytes)
    if found:
        raise LaunchLimitError(f"{kernel}[grid {dims(grid)}, block {dims(block)}]: {'; '.join(found)}. "
                               "A GPU refuses this launch (CUDA_ERROR_INVALID_VALUE): grid-stride "
                               "over the rows, or fold them into grid x.")


def kernel_name(py_func) -> str:
    """``module.function`` of a kernel's Python function (the kit's prefix and kernels/common/'s
    folder left out: ``vram_trap.linear_forward_kernel``, ``tiled_matmul.matmul_kernel``)."""
    module = (getattr(py_func, "__module__", None) or "?").removeprefix("backprop_traps.kernels.")
    return f"{module.removeprefix('common.')}.{getattr(py_func, '__name__', '?')}"


def install() -> None:
    """Check every launch the Numba CUDA simulator is asked for (idempotent).

    Wraps ``FakeCUDAKernel.__getitem__``: ``kernel[grid, block]`` and ``kernel[grid, block,
    stream, shared]`` both pass through it, whoever imported the kernel and however.
    """
    from numba.cuda.simulator import kernel as sim_kernel
    original = sim_kernel.FakeCUDAKernel.__getitem__
    if getattr(original, "_launch_limits", False):
        return

    def checked_getitem(self, configuration):
        configured = original(self, configuration)
        check(kernel_name(self.fn), self.grid_dim, self.block_dim, int(self.dynshared_size or 0))
        return configured

    checked_getitem._launch_limits = True
    sim_kernel.FakeCUDAKernel.__getitem__ = checked_getitem
