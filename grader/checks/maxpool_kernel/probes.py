"""Inputs for the maxpool_kernel checks, the exact reference, and the launcher that runs the
learner's kernels in the sandbox under the race checker.

The learner's kernels only ever run in the sandboxed child. ``HARNESS`` is loaded there after
the learner's code (``Question.services``): it launches a kernel on a 1-D grid of the block
size the check chooses, inside kernels/race_checker.py (its source is loaded along), and
answers with dx, the exception a simulated thread raised (if any) and the checker's flags.
Flags can only cost points: a check passes only on the right dx, so a report forged clean by
sabotage inside the learner's own code still needs kernels that compute the right answer.
"""
from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np

RACE_CHECKER = Path(importlib.util.find_spec("backprop_traps.kernels.race_checker").origin)  # read, never imported here

HARNESS = '''
_grader_race = {"__name__": "race_checker"}
exec(compile(%r, "<race checker>", "exec"), _grader_race)
del _grader_race["__builtins__"]


def _grader_launch(which, threads, dout, argmax, input_shape, kernel_size, stride):
    import math as _math
    import numpy as _np
    from numba import cuda as _cuda
    _grader_race["install"]()
    name = "maxpool2d_backward_%%s_kernel" %% which
    kernel = globals().get(name)
    if kernel is None:
        return {"error": name + " is not defined", "flags": [], "dx": None}
    if not callable(kernel) or not hasattr(kernel, "__getitem__"):
        return {"error": name + " is not a @cuda.jit kernel (it must be launched as kernel[blocks, threads](...))",
                "flags": [], "dx": None}
    shape = tuple(int(n) for n in input_shape)
    gather = which == "gather"
    d_dx = _cuda.to_device(_np.full(shape, _np.nan) if gather else _np.zeros(shape))
    args = [_cuda.to_device(_np.ascontiguousarray(dout)), _cuda.to_device(_np.ascontiguousarray(argmax)), d_dx]
    if gather:
        args += [int(kernel_size), int(stride)]
    total = int(_np.prod(shape)) if gather else int(_np.asarray(dout).size)
    error = None
    with _grader_race["checking"]() as log:
        try:
            kernel[max(1, _math.ceil(total / threads)), threads](*args)
        except Exception as exc:
            error = "%%s: %%s" %% (type(exc).__name__, str(exc)[:300])
    flags = [{k: f[k] for k in ("kind", "array", "index", "message")} for f in log.flags]
    return {"dx": d_dx.copy_to_host(), "error": error, "flags": flags}
'''


def services():
    """The harness, run in the sandbox after the learner's code; nothing runs in the grader."""
    return HARNESS % RACE_CHECKER.read_text(encoding="utf-8"), {}


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
