"""The maxpool_kernel traps: the wrong answers a check can compute, and how the launcher's
report (an exception, the race checker's flags) names a mistake."""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.question import Trap

TRAPS = [
    Trap("race", "Two threads of your kernel read, add and write the same element of `dx` with no "
         "atomic: where windows overlap, one input wins several windows, and a plain `+=` from "
         "several threads can lose gradients (the simulator's schedule may hide it; a GPU will not). "
         "Make the scatter's add one indivisible step, or give each element of dx one writer."),
    Trap("out-of-bounds", "Your kernel reads or writes outside its arrays. A launch rounds the "
         "thread count up to whole blocks, so the last block has threads past the end: each thread "
         "must compare its index with the size of the array it owns and return."),
    Trap("lost-overlap", "An input that won several overlapping windows keeps only one of their "
         "gradients: it must receive the sum over every window it won."),
]


def first_window_only(dout, argmax, shape, k, s):
    """dx when each input keeps only the first (row-major) window it won: a gather that stops early."""
    N, C, H, W = shape
    Ho, Wo = dout.shape[2], dout.shape[3]
    dx = np.zeros(shape)
    seen = np.zeros(shape, dtype=bool)
    for n in range(N):
        for c in range(C):
            for ho in range(Ho):
                for wo in range(Wo):
                    h, w = divmod(int(argmax[n, c, ho, wo]), W)
                    if not seen[n, c, h, w]:
                        seen[n, c, h, w] = True
                        dx[n, c, h, w] = dout[n, c, ho, wo]
    return dx


def last_window_only(dout, argmax, shape, k, s):
    """dx when each input keeps only the last window it won: a scatter that overwrites."""
    N, C, H, W = shape
    dx = np.zeros((N, C, H * W))
    for n in range(N):
        for c in range(C):
            dx[n, c][argmax[n, c].ravel()] = dout[n, c].ravel()
    return dx.reshape(shape)


def from_report(report: dict) -> str | None:
    """The trap a launch's report shows: an index error or a negative index is out-of-bounds;
    a read-write conflict on dx (a += from two threads) is a race; write-write alone is an
    overwrite, lost-overlap. None when the report shows none of these."""
    error = report.get("error") or ""
    flags = [f for f in report.get("flags") or [] if isinstance(f, dict)]
    kinds = {f.get("kind") for f in flags}
    if "IndexError" in error or "out of bounds" in error or "negative-index" in kinds:
        return "out-of-bounds"
    # the traps are conflicts on dx, a global array (dout and argmax are only read: a write there is
    # a stray write); a conflict in shared memory (a missing syncthreads) is told, not named
    on_dx = {f.get("kind") for f in flags if not str(f.get("array", "")).startswith("shared array")}
    if "read-write" in on_dx:
        return "race"
    if "write-write" in on_dx:
        return "lost-overlap"
    return None
