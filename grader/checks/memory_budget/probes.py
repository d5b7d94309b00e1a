"""Inputs for the memory_budget checks, the exact search a plan is judged by, and the memory
budget of a stack of reversible blocks.

Shapes: sizes int64 (L,) and costs float64 (L,) for the plan; x1, x2, y1, y2, t1, t2 and their
gradients (N, D); a block is (Wf (D, D), bf (D,), Wg (D, D), bg (D,)).
"""
from __future__ import annotations

import math

import numpy as np

from backprop_traps.grader.engine.question import Fail

PLAN, FWD, INV, BWD, NET, OFF = ("checkpoint_plan", "rev_forward", "rev_inverse", "rev_backward",
                                 "revnet_loss_and_grads", "offload_step_time")
GRADS = ("dx1", "dx2", "dWf", "dbf", "dWg", "dbg")
MEM_L, MEM_N, MEM_D, SLACK = 32, 2048, 32, 16
"""The measured stack: 32 blocks of two (2048, 32) halves; 16 halves of room beside the call's
own four inputs (see the check's docstring)."""


# -- plans ------------------------------------------------------------------------------------
def plan_problem(rng, L: int, fill: float | None = None):
    """(sizes, costs, budget): sizes 1..9 units, costs in [0.1, 5] (distinct, so the best plan
    is unique), a budget of ``fill`` (default: 25 to 75 %) of the total."""
    sizes = rng.integers(1, 10, L).astype(np.int64)
    costs = rng.uniform(0.1, 5.0, L)
    fill = rng.uniform(0.25, 0.75) if fill is None else fill
    return sizes, costs, int(round(fill * int(sizes.sum())))


def exact_search(sizes, costs, budget) -> tuple[float, np.ndarray]:
    """(the least recompute, a plan that has it) over every subset: the grader's own judge."""
    L = len(sizes)
    masks = ((np.arange(2 ** L)[:, None] >> np.arange(L)) & 1).astype(bool)  # 2^L, L
    fits = masks @ sizes <= budget
    recompute = (~masks) @ costs
    best = int(np.argmin(np.where(fits, recompute, np.inf)))
    return float(recompute[best]), masks[best]


def as_plan(ctx, value, L: int, where: str) -> np.ndarray:
    """The learner's plan as a bool array of L, or Fail saying what it is instead."""
    if isinstance(value, np.ndarray) and value.shape == (L,) and value.dtype.kind == "b":
        return value
    if isinstance(value, np.ndarray) and value.shape == (L,) and value.dtype.kind in "iu" \
            and np.isin(value, (0, 1)).all():
        raise Fail(f"checkpoint_plan must return a bool array, True for each activation kept, but on "
                   f"{where} it returned 0s and 1s of dtype {value.dtype}. As an index that is not a "
                   "mask: sizes[keep] with integers picks ops 0 and 1 by position (here "
                   f"{[int(i) for i in value]}), not the kept ones. Return keep.astype(bool), or build "
                   "it as np.zeros(L, dtype=bool).")
    what = (f"an array of shape {value.shape} and dtype {value.dtype}" if isinstance(value, np.ndarray)
            else f"a {type(value).__name__}")
    raise Fail(f"checkpoint_plan must return a bool array of shape ({L},), True for each activation "
               f"kept, but on {where} it returned {what}")


def describe(sizes, costs, budget) -> str:
    return f"{len(sizes)} ops, sizes {list(map(int, sizes))}, budget {budget}"


# -- reversible blocks ---------------------------------------------------------------------
def block(rng, D: int, scale: float = 0.9):
    """(Wf, bf, Wg, bg): tanh's inputs of order 1, neither linear nor flat."""
    return (rng.standard_normal((D, D)) * scale / math.sqrt(D), 0.2 * rng.standard_normal(D),
            rng.standard_normal((D, D)) * scale / math.sqrt(D), 0.2 * rng.standard_normal(D))


def halves(rng, N: int, D: int, count: int = 2):
    return [rng.standard_normal((N, D)) for _ in range(count)]


def stack(rng, L: int, N: int, D: int, scale: float = 0.9):
    """(blocks, x1, x2, t1, t2)."""
    return ([block(rng, D, scale) for _ in range(L)], *halves(rng, N, D, 4))


def flat(grads) -> np.ndarray:
    return np.concatenate([np.ravel(g) for per_block in grads for g in per_block])


def learner_stack_grads(ctx, value, L: int, where: str):
    """(loss, grads) with grads a list of L (dWf, dbf, dWg, dbg)."""
    loss, grads = ctx.unpack(value, 2, NET, "loss, grads")
    if not isinstance(grads, (list, tuple)) or len(grads) != L:
        got = f"{len(grads)} items" if isinstance(grads, (list, tuple)) else f"a {type(grads).__name__}"
        raise Fail(f"{where}`grads` must be a list of {L} tuples (dWf, dbf, dWg, dbg), one per block, "
                   f"but it is {got}.")
    return loss, [ctx.unpack(g, 4, NET, f"grads[{i}] = (dWf, dbf, dWg, dbg)") for i, g in enumerate(grads)]


def memory_budget(L: int, N: int, D: int) -> int:
    """Bytes allowed for one call: its four (N, D) inputs and SLACK more halves (a block's
    working set: the outputs, their gradients, two tanh values, two pre-activation gradients,
    and the allocator's slack), the parameters and their gradients. Not a multiple of L."""
    half, weights = N * D * 8, L * 2 * (D * D + D) * 8
    return (4 + SLACK) * half + 2 * weights
