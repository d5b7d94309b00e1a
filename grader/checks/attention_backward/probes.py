"""Inputs and calls for the attention_backward checks.

Shapes: q, k, v, o, do, dq, dk, dv (B, N, d); lse (B, N). Inputs have scores of order 1, or
c_i + r_ij with c_i = +-1e3..1e4 per query row (exp overflows or underflows without a max shift).
"""
from __future__ import annotations

import contextlib
import math

import numpy as np

from backprop_traps.grader.engine.question import Fail

FWD, BWD = "attention_forward", "attention_backward"
GRADS = ("dq", "dk", "dv")
MEM_B, MEM_N, MEM_D, TILE_ROWS = 1, 2048, 32, 128  # N: see the budget in __init__
MiB = 1024 * 1024


# -- input generators ------------------------------------------------------------------
def qkv(rng, B, N, d):
    """q, k, v with scores of order 1 (softmaxes neither flat nor one-hot)."""
    return tuple(rng.standard_normal((B, N, d)) for _ in range(3))


def huge_scores(rng, B, N, d):
    """q, k, v whose scores are c_i + r_ij: c_i = +-1e3..1e4 per query row (exp overflows or
    underflows without a max shift), r_ij of order 1 (the softmax is far from one-hot)."""
    q, k, v = qkv(rng, B, N, d)
    k[:, :, 0] = 1.0
    q[:, :, 0] = rng.choice([-1.0, 1.0], size=(B, N)) * rng.uniform(1e3, 1e4, size=(B, N)) * math.sqrt(d)
    return q, k, v


def where(q, causal, note: str = "") -> str:
    B, N, d = q.shape
    return f"With B={B}, N={N}, d={d}, causal={causal}{', ' + note if note else ''}: "


@contextlib.contextmanager
def prefixed(text: str):
    """Put ``text`` (the shapes) in front of any failure's feedback."""
    try:
        yield
    except Fail as fail:
        raise Fail(text + fail.feedback, fail.trap) from None


# -- calling the learner -------------------------------------------------------------------
def call_forward(ctx, *args, **how):
    """``(o, lse)`` from the learner's forward; with ``how`` (echo_args, measure_memory), also
    the call's result."""
    result = ctx.call(FWD, *args, **how)
    value = ctx.unpack(result.value if how else result, 2, FWD, "o, lse")
    return (value, result) if how else value


def call_backward(ctx, *args, **how):
    """``(dq, dk, dv)`` from the learner's backward, as ``call_forward``."""
    result = ctx.call(BWD, *args, **how)
    value = ctx.unpack(result.value if how else result, 3, BWD, "dq, dk, dv")
    return (value, result) if how else value


def non_finite(*arrays) -> bool:
    return any(isinstance(a, np.ndarray) and a.dtype.kind == "f" and not np.all(np.isfinite(a))
               for a in arrays)
