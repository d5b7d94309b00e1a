"""Inputs and feedback probes for the routing_trap checks.

Shapes: x (N, C, H, W), window k, stride s, out (N, C, Ho, Wo).

- Inputs: tie-free planes (values 1e-2 apart, so the derivative exists), planes of small
  integers (nearly every window tied), and the boundary cases the contract allows.
- Feedback: which inputs lie in several windows, which tied maxima lose, and the smallest
  plane on which an answer is still wrong.
"""
from __future__ import annotations

import numpy as np


# -- input generators ------------------------------------------------------------------
def tie_free(rng, shape) -> np.ndarray:
    """Distinct values at least 1e-2 apart, so every window has one clear max and the
    derivative exists (finite differences move inputs by 1e-6 only)."""
    values = rng.permutation(int(np.prod(shape))).astype(np.float64) * 1e-2
    return (values - values.mean()).reshape(shape)


def with_ties(rng, shape) -> np.ndarray:
    """Small integers: nearly every window holds tied maxima."""
    return rng.integers(0, 3, size=shape).astype(np.float64)


def boundary_cases(rng):
    """(x, k, s) at the edges the contract allows: k = 1 (every input is its own window), one
    window covering the whole plane, a stride larger than the window (inputs no window reads),
    and planes of negative values only (a running max started at 0 never moves)."""
    return [(tie_free(rng, (2, 2, 4, 5)), 1, 1),
            (tie_free(rng, (2, 3, 5, 5)), 5, 1),
            (tie_free(rng, (1, 2, 8, 9)), 2, 3),
            (tie_free(rng, (2, 1, 6, 6)) - 10.0, 3, 3)]


def out_shape(shape, k, s):
    n, c, h, w = shape
    return (n, c, (h - k) // s + 1, (w - k) // s + 1)



def windows(shape, k, s):
    """Yield (dy, dx) offsets with the slices of the input they touch for every output."""
    _, _, ho, wo = out_shape(shape, k, s)
    for dy in range(k):
        for dx in range(k):
            yield np.s_[:, :, dy:dy + s * (ho - 1) + 1:s, dx:dx + s * (wo - 1) + 1:s]



# -- where a wrong answer differs, and the smallest example (feedback only) -------------
def coverage(shape, k, s) -> np.ndarray:
    """How many windows contain each input, (N, C, H, W)."""
    cov = np.zeros(shape)
    for win in windows(shape, k, s):
        cov[win] += 1  # one slice has no repeated positions: plain += is exact
    return cov


def tied_losers(x, argmax, k, s) -> np.ndarray:
    """Inputs equal to the max of a window they are in without being its argmax (they get 0)."""
    w = x.shape[3]
    _, _, ho, wo = argmax.shape
    top = np.full(argmax.shape, -np.inf)
    for win in windows(x.shape, k, s):
        top = np.maximum(top, x[win])
    oy, ox = np.meshgrid(np.arange(ho) * s, np.arange(wo) * s, indexing="ij")
    mask = np.zeros(x.shape, dtype=bool)
    for i, win in enumerate(windows(x.shape, k, s)):
        dy, dx = divmod(i, k)
        mask[win] |= (x[win] == top) & (argmax != (oy + dy) * w + (ox + dx))
    return mask


def backward_regions(ctx, x, argmax, k, s) -> dict:
    won = ctx.ref.maxpool2d_backward(np.ones(argmax.shape), argmax, x.shape, k, s)  # wins per input
    return {"at inputs that won more than one window": won > 1,
            "at tied maxima that are not their window's first maximum": tied_losers(x, argmax, k, s),
            "where windows overlap": coverage(x.shape, k, s) > 1,
            "at inputs that won no window (they should get 0)": won == 0}


def _small_plane(rng, hw, ties=False):
    """A (1, 1, h, w) plane easy to read: distinct integers, or 0..2 when ties are wanted."""
    if ties:
        return with_ties(rng, (1, 1, *hw))
    return rng.permutation(hw[0] * hw[1]).astype(np.float64).reshape(1, 1, *hw)


def small_sizes(k, s, count=3):
    """Plane sizes (h, w), smallest first: 1, 2, 3 windows down, and square or one more across
    (a non-square plane catches swapped H and W)."""
    return [(k + i * s, k + (i + j) * s) for i in range(count) for j in (0, 1)]


def max_backward_example(ctx, k, s, ties=False):
    def build(rng, hw):
        x = _small_plane(rng, hw, ties)
        ctx.sandbox.call("maxpool2d_forward", x, k, s)  # a backward that peeks at a cached x sees this one
        _, argmax = ctx.ref.maxpool2d_forward(x, k, s)
        dout = rng.integers(1, 10, size=argmax.shape).astype(np.float64)
        args = {"dout": dout, "argmax": argmax, "input_shape": x.shape, "kernel_size": k, "stride": s}
        return args, {"x": x, "dout": dout, "argmax": argmax, "kernel_size": k, "stride": s}
    return lambda: ctx.smallest_failure("maxpool2d_backward", build, small_sizes(k, s),
                                        ctx.ref.maxpool2d_backward, name="dx")


def max_forward_example(ctx, k, s, part, ties=False):
    """``part`` 0 compares ``out``, 1 compares ``argmax``."""
    def build(rng, hw):
        return {"x": _small_plane(rng, hw, ties), "kernel_size": k, "stride": s}
    return lambda: ctx.smallest_failure(
        "maxpool2d_forward", build, small_sizes(k, s),
        lambda x, k_, s_: ctx.ref.maxpool2d_forward(x, k_, s_)[part], pick=lambda v: v[part],
        name=("out", "argmax")[part])


def avg_example(ctx, k, s, backward):
    def build(rng, hw):
        x = _small_plane(rng, hw)
        if not backward:
            return {"x": x, "kernel_size": k, "stride": s}
        dout = rng.integers(1, 10, size=out_shape(x.shape, k, s)).astype(np.float64)
        return {"dout": dout, "input_shape": x.shape, "kernel_size": k, "stride": s}
    fn = "avgpool2d_backward" if backward else "avgpool2d_forward"
    return lambda: ctx.smallest_failure(fn, build, small_sizes(k, s), getattr(ctx.ref, fn),
                                        name="dx" if backward else "out")

