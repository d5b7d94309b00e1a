"""Max and average pooling in Numba CUDA: the routing trap on a GPU.

Kernels, forward directly above backward:
  1. maxpool2d_forward_inference_kernel: values only. The inference kernel, and the trap:
     it forgets where each max came from, so nothing can be routed back.
  2. maxpool2d_forward_kernel: values + int64 argmax (first max in row-major order wins),
     the cache the training backward pass needs.
  3. maxpool2d_backward_kernel: a GATHER. One thread per input element sums dout over the
     windows whose argmax chose it. Each dx element is written once by one thread: no
     atomics, no contention, and the same bits on every run; overlap is handled because
     the thread visits every window that covers its input.
  4. maxpool2d_backward_atomic_kernel: a SCATTER, kept only as the contrast. One thread
     per output does cuda.atomic.add into dx[argmax]. Correct with overlap (the atomics
     accumulate), but the order of the adds differs run to run, so float sums are not
     bit-reproducible; threads whose windows share a winner contend for one address; and
     float64 atomicAdd needs compute capability 6.0 or newer.
  5. avgpool2d_forward_kernel: the mean of each window.
  6. avgpool2d_backward_kernel: a gather, like 3, with every covering window contributing
     dout / (k * k).

Shape letters: N batch, C channels, H, W input plane, k window (k x k), s stride, no
padding, Ho = (H - k) // s + 1, Wo = (W - k) // s + 1. argmax holds the flat index
h * W + w inside the (H, W) plane, as torch.nn.functional.max_pool2d(return_indices=True).

Run: the launchers (``*_device``) take device arrays and only launch: the benchmark times
them and the dry run checks their grids (kernels/runtime/dry_run.py). The host functions at the
bottom take and return numpy arrays, with the same arguments and results as the solution
notebook's functions. On a machine with no GPU set
NUMBA_ENABLE_CUDASIM=1 before numba is imported (tests/conftest.py does) to run them in
Numba's CUDA simulator; on a GPU they compile for the device. The kernels are generic over
the float dtype: scalars they need (zero, 1 / (k * k)) are passed in x's dtype, so float32
math is not promoted to float64.

Version 2 (kernels/routing_trap_v2.py) keeps these kernels' plan and makes them fast: a 3-D
grid and flat arrays with unsigned offsets (no division to find an element), the window
compiled in, and an s x s cell a thread in the backward passes (issue 34 measured this
file's gather at 5% of copy bandwidth).

Check and time it: python -m backprop_traps.kernels.routing_trap (from any folder) runs these kernels on the
benchmark's tiny cases in float64 and float32 against the solution notebook, the CPU
reference, and times them (kernels/runtime/self_check.py; the simulator without a GPU).
"""

if __name__ == "__main__":  # python -m backprop_traps.kernels.routing_trap: no GPU? the simulator, before numba loads
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import math

import numpy as np

from backprop_traps.kernels.runtime.device import cuda

THREADS_PER_BLOCK = 128  # the one launch config: a 1-D grid, one thread per element


# ---------------------------------------------------------------- device helpers

@cuda.jit(device=True)
def unravel4(idx, C, H, W):
    """Flat index into a contiguous (N, C, H, W) array -> (n, c, h, w)."""
    w = idx % W
    idx //= W
    h = idx % H
    idx //= H
    return idx // C, idx % C, h, w


@cuda.jit(device=True)
def covering_windows(h, k, s, Ho):
    """The output rows (or columns) whose windows cover input row (or column) h.

    Window o covers o * s .. o * s + k - 1, so o runs from ceil((h - k + 1) / s) to h // s,
    clipped to [0, Ho). Returns (first, stop); the range is empty when first >= stop. The
    numerator is kept non-negative, so the bound is plainly the ceiling it stands for: Numba
    gives Python's floor division on integers on a GPU and in the simulator alike (it is C's
    truncating / that would round a negative quotient the other way).
    """
    first = 0 if h < k else (h - k + s) // s
    stop = min(h // s + 1, Ho)
    return first, stop


@cuda.jit(device=True)
def window_max(x, n, c, h0, w0, k):
    """The largest value of the k x k window whose top-left corner is (h0, w0)."""
    best = x[n, c, h0, w0]
    for i in range(k):
        for j in range(k):
            v = x[n, c, h0 + i, w0 + j]
            if v > best:
                best = v
    return best


@cuda.jit(device=True)
def window_argmax(x, n, c, h0, w0, k, W):
    """(value, flat index h * W + w) of the window's first maximum in row-major order."""
    best = x[n, c, h0, w0]
    best_pos = h0 * W + w0
    for i in range(k):
        for j in range(k):
            v = x[n, c, h0 + i, w0 + j]
            if v > best:  # strictly greater: a later tie never replaces the first maximum
                best = v
                best_pos = (h0 + i) * W + (w0 + j)
    return best, best_pos


# ---------------------------------------------------------------- kernels

@cuda.jit
def maxpool2d_forward_inference_kernel(x, out, k, s):
    """1. One thread per output: out = max of its window. No argmax is kept."""
    N, C, Ho, Wo = out.shape
    idx = cuda.grid(1)
    if idx < N * C * Ho * Wo:
        n, c, ho, wo = unravel4(idx, C, Ho, Wo)
        out[n, c, ho, wo] = window_max(x, n, c, ho * s, wo * s, k)


@cuda.jit
def maxpool2d_forward_kernel(x, out, argmax, k, s):
    """2. One thread per output: the max of its window and where it came from."""
    N, C, Ho, Wo = out.shape
    W = x.shape[3]
    idx = cuda.grid(1)
    if idx < N * C * Ho * Wo:
        n, c, ho, wo = unravel4(idx, C, Ho, Wo)
        best, best_pos = window_argmax(x, n, c, ho * s, wo * s, k, W)
        out[n, c, ho, wo] = best
        argmax[n, c, ho, wo] = best_pos


@cuda.jit
def maxpool2d_backward_kernel(dout, argmax, dx, k, s, zero):
    """3. One thread per input: dx = sum of dout over the covering windows it won."""
    N, C, H, W = dx.shape
    Ho, Wo = dout.shape[2], dout.shape[3]
    idx = cuda.grid(1)
    if idx < N * C * H * W:
        n, c, h, w = unravel4(idx, C, H, W)
        me = h * W + w
        ho_first, ho_stop = covering_windows(h, k, s, Ho)
        wo_first, wo_stop = covering_windows(w, k, s, Wo)
        acc = zero
        for ho in range(ho_first, ho_stop):
            for wo in range(wo_first, wo_stop):
                if argmax[n, c, ho, wo] == me:
                    acc += dout[n, c, ho, wo]
        dx[n, c, h, w] = acc


@cuda.jit
def maxpool2d_backward_atomic_kernel(dout, argmax, dx):
    """4. One thread per output: atomically add dout into the input its argmax names.

    dx must start at zero. The contrast to kernel 3; see the module docstring.
    """
    N, C, Ho, Wo = dout.shape
    W = dx.shape[3]
    idx = cuda.grid(1)
    if idx < N * C * Ho * Wo:
        n, c, ho, wo = unravel4(idx, C, Ho, Wo)
        pos = argmax[n, c, ho, wo]
        cuda.atomic.add(dx, (n, c, pos // W, pos % W), dout[n, c, ho, wo])


@cuda.jit
def avgpool2d_forward_kernel(x, out, k, s, inv_area, zero):
    """5. One thread per output: out = sum of its window * (1 / (k * k))."""
    N, C, Ho, Wo = out.shape
    idx = cuda.grid(1)
    if idx < N * C * Ho * Wo:
        n, c, ho, wo = unravel4(idx, C, Ho, Wo)
        h0, w0 = ho * s, wo * s
        acc = zero
        for i in range(k):
            for j in range(k):
                acc += x[n, c, h0 + i, w0 + j]
        out[n, c, ho, wo] = acc * inv_area


@cuda.jit
def avgpool2d_backward_kernel(dout, dx, k, s, inv_area, zero):
    """6. One thread per input: dx = sum of dout over every covering window / (k * k)."""
    N, C, H, W = dx.shape
    Ho, Wo = dout.shape[2], dout.shape[3]
    idx = cuda.grid(1)
    if idx < N * C * H * W:
        n, c, h, w = unravel4(idx, C, H, W)
        ho_first, ho_stop = covering_windows(h, k, s, Ho)
        wo_first, wo_stop = covering_windows(w, k, s, Wo)
        acc = zero
        for ho in range(ho_first, ho_stop):
            for wo in range(wo_first, wo_stop):
                acc += dout[n, c, ho, wo]
        dx[n, c, h, w] = acc * inv_area


# ---------------------------------------------------------------- launchers: device arrays in, launched

def _blocks(n_threads):
    return max(1, math.ceil(n_threads / THREADS_PER_BLOCK))  # <= 2**31 - 1 up to 2.7e11 threads


def maxpool2d_forward_inference_device(d_x, d_out, k, s):
    """Kernel 1: d_out (N, C, Ho, Wo) from d_x (N, C, H, W)."""
    maxpool2d_forward_inference_kernel[_blocks(d_out.size), THREADS_PER_BLOCK](d_x, d_out, k, s)


def maxpool2d_forward_device(d_x, d_out, d_argmax, k, s):
    """Kernel 2: d_out and d_argmax (int64), both (N, C, Ho, Wo), from d_x (N, C, H, W)."""
    maxpool2d_forward_kernel[_blocks(d_out.size), THREADS_PER_BLOCK](d_x, d_out, d_argmax, k, s)


def maxpool2d_backward_device(d_dout, d_argmax, d_dx, k, s):
    """Kernel 3 (gather): d_dx (N, C, H, W), every element written."""
    maxpool2d_backward_kernel[_blocks(d_dx.size), THREADS_PER_BLOCK](
        d_dout, d_argmax, d_dx, k, s, d_dout.dtype.type(0))


def maxpool2d_backward_atomic_device(d_dout, d_argmax, d_dx):
    """Kernel 4 (scatter): adds into d_dx, which must start at zero."""
    maxpool2d_backward_atomic_kernel[_blocks(d_dout.size), THREADS_PER_BLOCK](d_dout, d_argmax, d_dx)


def avgpool2d_forward_device(d_x, d_out, k, s):
    """Kernel 5: d_out (N, C, Ho, Wo) from d_x (N, C, H, W)."""
    dtype = d_x.dtype
    avgpool2d_forward_kernel[_blocks(d_out.size), THREADS_PER_BLOCK](
        d_x, d_out, k, s, dtype.type(1.0 / (k * k)), dtype.type(0))


def avgpool2d_backward_device(d_dout, d_dx, k, s):
    """Kernel 6 (gather): d_dx (N, C, H, W), every element written."""
    dtype = d_dout.dtype
    avgpool2d_backward_kernel[_blocks(d_dx.size), THREADS_PER_BLOCK](
        d_dout, d_dx, k, s, dtype.type(1.0 / (k * k)), dtype.type(0))


# ---------------------------------------------------------------- host functions: numpy in, out

def _pooled_shape(input_shape, k, s):
    N, C, H, W = input_shape
    return N, C, (H - k) // s + 1, (W - k) // s + 1


def maxpool2d_forward_inference(x, kernel_size, stride):
    """Kernel 1 on numpy x (N, C, H, W) -> out (N, C, Ho, Wo). Values only."""
    x = np.ascontiguousarray(x)
    d_out = cuda.device_array(_pooled_shape(x.shape, kernel_size, stride), dtype=x.dtype)
    maxpool2d_forward_inference_device(cuda.to_device(x), d_out, kernel_size, stride)
    return d_out.copy_to_host()


def maxpool2d_forward(x, kernel_size, stride):
    """Kernel 2 on numpy x (N, C, H, W) -> (out, argmax int64), both (N, C, Ho, Wo)."""
    x = np.ascontiguousarray(x)
    shape = _pooled_shape(x.shape, kernel_size, stride)
    d_out = cuda.device_array(shape, dtype=x.dtype)
    d_argmax = cuda.device_array(shape, dtype=np.int64)
    maxpool2d_forward_device(cuda.to_device(x), d_out, d_argmax, kernel_size, stride)
    return d_out.copy_to_host(), d_argmax.copy_to_host()


def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):
    """Kernel 3 (gather): dout, argmax (N, C, Ho, Wo) -> dx of input_shape."""
    dout = np.ascontiguousarray(dout)
    argmax = np.ascontiguousarray(argmax, dtype=np.int64)
    d_dx = cuda.device_array(tuple(input_shape), dtype=dout.dtype)
    maxpool2d_backward_device(cuda.to_device(dout), cuda.to_device(argmax), d_dx, kernel_size, stride)
    return d_dx.copy_to_host()


def maxpool2d_backward_atomic(dout, argmax, input_shape, kernel_size, stride):
    """Kernel 4 (scatter with atomics), same arguments and result as maxpool2d_backward.

    kernel_size and stride are unused (argmax already names the input); they are kept so
    the two backward passes can be swapped for each other.
    """
    dout = np.ascontiguousarray(dout)
    argmax = np.ascontiguousarray(argmax, dtype=np.int64)
    d_dx = cuda.to_device(np.zeros(tuple(input_shape), dtype=dout.dtype))
    maxpool2d_backward_atomic_device(cuda.to_device(dout), cuda.to_device(argmax), d_dx)
    return d_dx.copy_to_host()


def avgpool2d_forward(x, kernel_size, stride):
    """Kernel 5 on numpy x (N, C, H, W) -> out (N, C, Ho, Wo)."""
    x = np.ascontiguousarray(x)
    d_out = cuda.device_array(_pooled_shape(x.shape, kernel_size, stride), dtype=x.dtype)
    avgpool2d_forward_device(cuda.to_device(x), d_out, kernel_size, stride)
    return d_out.copy_to_host()


def avgpool2d_backward(dout, input_shape, kernel_size, stride):
    """Kernel 6 (gather): dout (N, C, Ho, Wo) -> dx of input_shape."""
    dout = np.ascontiguousarray(dout)
    d_dx = cuda.device_array(tuple(input_shape), dtype=dout.dtype)
    avgpool2d_backward_device(cuda.to_device(dout), d_dx, kernel_size, stride)
    return d_dx.copy_to_host()


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("routing_trap"))
