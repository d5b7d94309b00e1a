"""Question 23's Functions in Numba CUDA: Square (forward, backward, double backward) and the
straight-through RoundSTE (forward, backward).

A custom autograd Function on a GPU is a pair of kernels: the forward writes its output and
leaves what the backward needs (here Square's input x, nothing for RoundSTE), and the backward
turns grad_output into the input's gradient. All of them are elementwise, so each is one pass
over flat arrays, memory-bound: a grid-stride loop, one read and one write per array element.

1. ``square_forward_kernel``: y = x * x.
2. ``square_backward_kernel``: dx = 2 x dy, from the saved x (not from y: y = x * x has lost
   the sign of x, and 2 sqrt(y) dy would be 2 |x| dy).
3. ``square_double_backward_kernel``: the backward of the backward, what a Hessian-vector
   product needs from Square. With a gradient gdx arriving on dx = 2 x dy, it writes
   gx = 2 dy gdx (the second derivative along x) and gdy = 2 x gdx (along grad_output).
4. ``round_ste_forward_kernel``: y = round(x), halves to the even integer, in x's dtype:
   (x + M) - M with M = 1.5 * 2^p (p = 23 in float32, 52 in float64) rounds |x| < 2^(p - 1) in
   the IEEE default mode, on a GPU and in the simulator alike (as kernels/straight_through.py);
   the host checks the range, beyond which float32 holds halves no rounding trick reaches.
5. ``round_ste_backward_kernel``: dx = dy, the straight-through estimator: round's own
   derivative, 0 almost everywhere, replaced by 1.

Indices are unsigned 64-bit (``_u``): Numba then drops the negative-index wrap-around check on
every load. Constants (2, M) arrive in the arrays' dtype, so a float32 launch has no float64
instruction; ``x + x`` is 2x exactly.

Bytes per element: forward 2 reads/writes, backward 3, double backward 5, round 2, copy 2.

The launchers (``*_device``) take C-ordered device arrays of any one shape, hand the kernels
flat views (a ravel: no copy) and only launch: the benchmark times them and kernels/runtime/dry_run.py
checks their grids at any size. The host functions at the bottom take and return numpy arrays.

Run the tests under the simulator (no GPU needed), on a GPU with BACKPROP_TRAPS_REAL_GPU=1:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_custom_function_kernels.py
Check and time it: python -m backprop_traps.kernels.custom_function (from any folder) runs
these kernels on the benchmark's tiny cases (kernels/cases/custom_function.py) in float64 and
float32 against the solution notebook, and times them (kernels/runtime/self_check.py; the simulator
without a GPU).

Shapes: E = x.size; every array is flat (E,) inside the kernels; the launchers and the host
functions take any shape.
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.custom_function: no GPU? the simulator
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import math

import numba
import numpy as np

from backprop_traps.kernels.runtime.device import cuda

THREADS_PER_BLOCK = 256
MAX_BLOCKS = 4096  # a grid-stride loop covers the rest: far under the 2^31 - 1 blocks of grid x


def launch_config(elements: int):
    """(blocks, threads) for a grid-stride loop over ``elements``."""
    return max(1, min(MAX_BLOCKS, math.ceil(elements / THREADS_PER_BLOCK))), THREADS_PER_BLOCK


@cuda.jit(device=True)
def _u(i):
    return numba.uint64(i)


# 1. and 2. Square: forward above backward ------------------------------------------------------
@cuda.jit
def square_forward_kernel(x, y):
    # x: E; y: E (written)
    for i in range(_u(cuda.grid(1)), _u(x.size), _u(cuda.gridsize(1))):
        v = x[i]
        y[i] = v * v


@cuda.jit
def square_backward_kernel(x, dy, dx):
    # x: E, the saved input; dy: E; dx: E (written) = 2 x dy
    for i in range(_u(cuda.grid(1)), _u(x.size), _u(cuda.gridsize(1))):
        v = x[i]
        dx[i] = (v + v) * dy[i]


# 3. Square's double backward ---------------------------------------------------------------------
@cuda.jit
def square_double_backward_kernel(x, dy, gdx, gx, gdy):
    # x, dy: E, the backward's inputs; gdx: E, the gradient arriving on dx = 2 x dy;
    # gx = 2 dy gdx, gdy = 2 x gdx: E each (written)
    for i in range(_u(cuda.grid(1)), _u(x.size), _u(cuda.gridsize(1))):
        g = gdx[i]
        g2 = g + g
        gx[i] = dy[i] * g2
        gdy[i] = x[i] * g2


# 4. and 5. RoundSTE: forward above backward ---------------------------------------------------------
@cuda.jit
def round_ste_forward_kernel(x, magic, y):
    # x: E; magic: 1.5 * 2^p in x's dtype; y: E (written), halves to even
    for i in range(_u(cuda.grid(1)), _u(x.size), _u(cuda.gridsize(1))):
        y[i] = (x[i] + magic) - magic


@cuda.jit
def round_ste_backward_kernel(dy, dx):
    # dy: E; dx: E (written) = dy, straight through
    for i in range(_u(cuda.grid(1)), _u(dy.size), _u(cuda.gridsize(1))):
        dx[i] = dy[i]


# launchers: device arrays in, launched ---------------------------------------------------------------
def magic_number(dtype) -> np.generic:
    """1.5 * 2^p for the dtype's p mantissa bits, in that dtype."""
    p = np.finfo(dtype).nmant
    return np.dtype(dtype).type(1.5 * 2.0 ** p)


def square_forward_device(d_x, d_y):
    """Kernel 1: d_y = x * x."""
    square_forward_kernel[launch_config(d_x.size)](d_x.ravel(), d_y.ravel())


def square_backward_device(d_x, d_dy, d_dx):
    """Kernel 2: d_dx = 2 x dy, from the saved d_x."""
    square_backward_kernel[launch_config(d_x.size)](d_x.ravel(), d_dy.ravel(), d_dx.ravel())


def square_double_backward_device(d_x, d_dy, d_gdx, d_gx, d_gdy):
    """Kernel 3: d_gx = 2 dy gdx and d_gdy = 2 x gdx."""
    square_double_backward_kernel[launch_config(d_x.size)](d_x.ravel(), d_dy.ravel(), d_gdx.ravel(),
                                                           d_gx.ravel(), d_gdy.ravel())


def round_ste_forward_device(d_x, d_y):
    """Kernel 4: d_y = round(x), halves to even (|x| < 2^(p - 1): the host function checks)."""
    round_ste_forward_kernel[launch_config(d_x.size)](d_x.ravel(), magic_number(d_x.dtype), d_y.ravel())


def round_ste_backward_device(d_dy, d_dx):
    """Kernel 5: d_dx = dy."""
    round_ste_backward_kernel[launch_config(d_dy.size)](d_dy.ravel(), d_dx.ravel())


# host functions: numpy in, numpy out -----------------------------------------------------------------
def _on_device(a, dtype=None):
    a = np.asarray(a)
    return cuda.to_device(np.ascontiguousarray(a, dtype=dtype or a.dtype))


def square_forward(x):
    """y = x * x, in x's dtype and shape."""
    d_x = _on_device(x)
    y = cuda.device_array(d_x.shape, dtype=d_x.dtype)
    square_forward_device(d_x, y)
    return y.copy_to_host()


def square_backward(x, dy):
    """dx = 2 x dy from the saved x."""
    d_x = _on_device(x)
    dx = cuda.device_array(d_x.shape, dtype=d_x.dtype)
    square_backward_device(d_x, _on_device(dy, d_x.dtype), dx)
    return dx.copy_to_host()


def square_double_backward(x, dy, gdx):
    """(gx, gdy): the gradients of <gdx, 2 x dy> with respect to x and dy."""
    d_x = _on_device(x)
    gx, gdy = (cuda.device_array(d_x.shape, dtype=d_x.dtype) for _ in range(2))
    square_double_backward_device(d_x, _on_device(dy, d_x.dtype), _on_device(gdx, d_x.dtype), gx, gdy)
    return gx.copy_to_host(), gdy.copy_to_host()


def round_ste_forward(x):
    """np.round(x) (halves to even), in x's dtype; |x| must stay under 2^(p - 1)."""
    d_x = _on_device(x)
    limit = 2.0 ** (np.finfo(d_x.dtype).nmant - 1)
    if d_x.size and not np.all(np.abs(np.asarray(x)) < limit):
        raise ValueError(f"round_ste_forward rounds |x| < {limit:g} in {d_x.dtype}")
    y = cuda.device_array(d_x.shape, dtype=d_x.dtype)
    round_ste_forward_device(d_x, y)
    return y.copy_to_host()


def round_ste_backward(dy):
    """dx = dy: the straight-through gradient."""
    d_dy = _on_device(dy)
    dx = cuda.device_array(d_dy.shape, dtype=d_dy.dtype)
    round_ste_backward_device(d_dy, dx)
    return dx.copy_to_host()


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("custom_function"))
