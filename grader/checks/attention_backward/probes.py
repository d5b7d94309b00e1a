"""Inputs and calls for the attention_backward checks.

Shapes: q, k, v, o, do, dq, dk, dv (B, N, d); lse (B, N). Inputs have scores of order 1, or
c_i + r_ij with c_i = +-1e3..1e4 per query row (exp overflows or underflows without a max shift).
"""
from __future__ import annotations

import contextlib
import functools
import math
import zlib

import numpy as np

from backprop_traps.grader.engine.gradcheck import upstream
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


def memory_inputs(seed: int):
    """q, k, v and do at the memory checks' size, from a stream of their own: the forward's
    check and the backward's get the same, so the reference's o and lse at that size are
    made once a grading (``reference_forward``), while the forward's calls are measured."""
    q, k, v, do = _memory_inputs(seed)
    return q.copy(), k.copy(), v.copy(), do.copy()


def reference_forward(forward, seed: int, causal: bool):
    """``forward(q, k, v, causal)`` (the reference's) on ``memory_inputs(seed)``, made once."""
    o, lse = _reference_forward(forward, seed, causal)
    return o.copy(), lse.copy()  # the cached arrays never reach anyone who could write into them


@functools.lru_cache(maxsize=1)
def _memory_inputs(seed):
    rng = np.random.default_rng([seed, zlib.crc32(b"attention_backward: memory inputs")])
    q, k, v = qkv(rng, MEM_B, MEM_N, MEM_D)
    return q, k, v, upstream(rng, q.shape)


@functools.lru_cache(maxsize=2)  # both paths of the latest grading
def _reference_forward(forward, seed, causal):
    q, k, v, _ = _memory_inputs(seed)
    return forward(q, k, v, causal)


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
