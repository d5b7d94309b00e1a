"""Inputs for the maxpool_kernel checks, the exact reference, what the grader's own child is
given to compile the learner's kernels, and who may write what.

The learner's kernels are never taken from the learner's namespace: ``source_harness`` is the
trusted code of a second child in which none of the learner's code runs
(grader/sandbox/source_child.py). It reads the submission's cells as text, compiles the two
kernels the contract names with ``cuda.jit`` itself (grader/sandbox/kernel_source.py), and
launches them under grader/sandbox/race_checker.py, answering plain data: dx, the exception a
simulated thread raised, the checker's flags, the threads that ran and who wrote what
(``stray_write`` reads that against the contract). Values are compared in the grader.
"""
from __future__ import annotations

import math

import numpy as np

KERNELS = {"scatter": "maxpool2d_backward_scatter_kernel", "gather": "maxpool2d_backward_gather_kernel"}
INPUTS = ("dout", "argmax")


def source_harness() -> str:
    """The grader's own child's code (``Question.source_harness``): the kernels from source."""
    from backprop_traps.grader.sandbox.source_child import kernel_harness
    return kernel_harness(list(KERNELS.values()))


def stray_write(writes, which: str, argmax, shape) -> str | None:
    """The first write a thread made outside what the contract gives it, in words, or None.
    ``writes`` rows are (argument position, flat element, global thread index). In the scatter
    thread i adds element i of dout into dx at its argmax; in the gather thread i writes element i
    of dx; threads past the end write nothing, and nothing writes dout or argmax. So one thread
    doing every window's work (no race to see) is told apart from the kernel the question asks for."""
    N, C, H, W = shape
    if which == "scatter":
        plane = np.arange(argmax.size) // max(1, argmax.shape[2] * argmax.shape[3])
        owned, owner = plane * H * W + argmax.ravel(), "element i of dout, added into dx at its argmax"
    else:
        owned, owner = np.arange(N * C * H * W), "element i of dx"
    for position, flat, thread in writes.tolist():
        if position != 2:
            return (f"thread {thread} writes {INPUTS[position] if position < 2 else 'an argument'}: a kernel "
                    "must not write its inputs")
        if not 0 <= thread < len(owned):
            return (f"thread {thread} is past the end (the {which} has work for {len(owned)} threads) and "
                    f"still writes dx{_at(flat, shape)}: it must return")
        if owned[thread] != flat:
            return (f"thread {thread} writes dx{_at(flat, shape)}, but in the {which} thread i owns {owner} "
                    f"(here dx{_at(owned[thread], shape)}): one thread per element, in row-major order, as "
                    "the contract says")
    return None


def _at(flat, shape) -> list[int]:
    return [int(i) for i in np.unravel_index(int(flat), shape)]


def pooled(shape, k, s):
    N, C, H, W = shape
    return N, C, (H - k) // s + 1, (W - k) // s + 1


def argmax_of(x, k, s):
    """argmax (N, C, Ho, Wo) int64 of max pooling x: flat h * W + w of each window's first maximum."""
    W = x.shape[3]
    windows = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(2, 3))[:, :, ::s, ::s]
    flat = windows.reshape(windows.shape[:4] + (k * k,)).argmax(axis=4)  # first maximum, row-major
    rows = np.arange(windows.shape[2])[:, None] * s + flat // k
    cols = np.arange(windows.shape[3])[None, :] * s + flat % k
    return (rows * W + cols).astype(np.int64)


def backward(dout, argmax, shape):
    """The exact dx: every dout added at its argmax (np.add.at sums repeated indices)."""
    N, C, H, W = shape
    dx = np.zeros((N, C, H * W))
    for n in range(N):
        for c in range(C):
            np.add.at(dx[n, c], argmax[n, c].ravel(), dout[n, c].ravel())
    return dx.reshape(shape)


def case(rng, shape, k, s, exact=False):
    """(dout, argmax) for an input of ``shape``: tie-free normal x; with ``exact``, dout values
    are multiples of 2**-30 below 4 in size, so every sum of a few of them is exact in float64
    (any order) and a float32 step anywhere shows."""
    x = rng.standard_normal(shape)
    argmax = argmax_of(x, k, s)
    if exact:
        dout = rng.integers(-2 ** 32, 2 ** 32, size=argmax.shape) * 2.0 ** -30
    else:
        dout = rng.standard_normal(argmax.shape)
    return dout, argmax


def wins(argmax, shape) -> int:
    """How many inputs won more than one window (where overlap matters)."""
    N, C, H, W = shape
    counts = np.stack([np.bincount(argmax[n, c].ravel(), minlength=H * W) for n in range(N) for c in range(C)])
    return int(np.sum(counts > 1))


def blocks_cover(total: int, threads: int) -> bool:
    return math.ceil(total / threads) * threads == total
