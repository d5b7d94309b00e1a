"""Numerical gradient checks in float64.

The backward of a learner is checked against central differences of the *reference*
forward, contracted with a random upstream gradient ``dout`` (never all-ones, which hides
transposes and mixed-up indices): the scalar is ``<dout, f(x)>`` and its gradient is the
vector-Jacobian product the backward must return.

- Small inputs (``x.size <= FULL_LIMIT``) get the full central-difference gradient, unless
  its evaluations would be large (``FULL_WORK``).
- Larger inputs get random-direction checks, as torch.autograd.gradcheck's fast mode
  does: for random unit ``u``, ``<dx, u>`` must equal ``(g(x + eps u) - g(x - eps u)) / 2 eps``.
  The cost is two forwards per direction, whatever the size.
- ``rows=True`` says that ``f`` treats the leading axis of ``x`` as independent rows (row
  ``i`` of ``f(x)`` depends on row ``i`` of ``x`` only, as pooling, convolution or LayerNorm
  over a batch do). Then every perturbed row is stacked into one array and ``f`` runs once
  (in chunks of at most ``STACK_BYTES``) instead of twice per element: the grader's own
  share of a grading drops from thousands of reference calls to a handful. Where ``f`` also
  reads other arrays that share that leading axis (keys and values beside the queries),
  wrap it in ``Rows``: each stacked row then gets its own row of those arrays.

Tolerances (float64, ``EPS = 1e-6``): central differences have truncation error
``O(eps^2 f''')`` and rounding error about ``1e-16 |g| / eps``, i.e. about 1e-10 relative
for O(1) values, so ``GRAD_RTOL = 1e-6`` leaves four orders of margin while any real
mistake (a missing factor, a lost contribution) is off by ``1e-2`` or more.

Kinks (a ReLU's z = 0, a max's tie): a central difference whose two points straddle a kink
averages the two one-sided slopes, so a right answer can miss it on an unlucky draw (about 1
draw in 300 for vram_trap's small net). Where the first estimate disagrees, the same entries or
directions are measured again with smaller steps (``KINK_STEPS``): an entry counts as right
when any estimate agrees with it. Every estimate is a valid derivative away from a kink, so a
wrong answer still disagrees with all of them; a kink is straddled at step ``h`` only within
``h`` of it, so each step 10x smaller makes a straddle 10x rarer.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

EPS = 1e-6
FULL_LIMIT = 512
FULL_WORK = 1 << 20
"""Full differences of a small input evaluate f twice per element: past this many output
elements in all (2 * x.size * f(x).size, f(x) shaped as ``dout``), the directional check runs
instead, as for a large input (LayerNorm's gamma of 300 under a 64 x 300 output: 600
evaluations of the whole batch, 11.5 million elements, for one gradient). Stacked rows are
exempt: they run f once."""
GRAD_RTOL = 1e-6
DIRECTIONS = 4
STACK_BYTES = 32 << 20
KINK_STEPS = (1e-7, 1e-8)  # rounding error at 1e-8 is about 1e-8 relative: far under GRAD_RTOL


def rel_error(got: np.ndarray, expected: np.ndarray) -> float:
    """``max |got - expected| / max(max |expected|, 1)``: relative for big values,
    absolute for small ones, so an all-near-zero gradient cannot pass by dividing by ~0."""
    got = np.asarray(got, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    scale = max(float(np.max(np.abs(expected), initial=0.0)), 1.0)
    return float(np.max(np.abs(got - expected), initial=0.0)) / scale


class Rows:
    """``f(x, *batched)`` as a function of ``x`` alone, for ``rows=True``: the arrays in
    ``batched`` share ``x``'s leading axis, and a stacked call takes the rows of them that
    its stacked rows came from."""

    def __init__(self, f: Callable, *batched: np.ndarray):
        self.f, self.batched = f, batched

    def __call__(self, x: np.ndarray, index: np.ndarray | None = None):
        return self.f(x, *(b if index is None else b[index] for b in self.batched))


def _stacked(f: Callable, stack: np.ndarray, index: np.ndarray):
    """``f`` of a stack whose row ``r`` is a variant of row ``index[r]`` of the input."""
    return f(stack, index) if isinstance(f, Rows) else f(stack)


def _scalar(f: Callable, dout: np.ndarray) -> Callable[[np.ndarray], float]:
    return lambda x: float(np.sum(dout * f(x)))


def numerical_gradient(f: Callable, x: np.ndarray, dout: np.ndarray, eps: float = EPS,
                       rows: bool = False) -> np.ndarray:
    """Full central-difference gradient of ``<dout, f(x)>`` with respect to ``x``."""
    if rows and np.ndim(x) >= 1 and np.size(x) > 0:
        return _rows_gradient(f, np.asarray(x, dtype=np.float64), dout, eps)
    g = _scalar(f, dout)
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    flat, gflat = x.reshape(-1), grad.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        plus = g(x)
        flat[i] = old - eps
        minus = g(x)
        flat[i] = old
        gflat[i] = (plus - minus) / (2 * eps)
    return grad


def _rows_gradient(f: Callable, x: np.ndarray, dout: np.ndarray, eps: float) -> np.ndarray:
    """``numerical_gradient`` for an ``f`` with independent rows: element ``j`` of row ``i``
    moves row ``i`` of the output only, so each perturbed copy of that one row is a row of a
    stacked input, and ``f`` of the stack gives every difference at once."""
    n, per = x.shape[0], x[0].size
    dout = np.asarray(dout, dtype=np.float64)
    grad = np.empty(n * per)
    chunk = max(1, STACK_BYTES // max(1, 2 * per * 8))
    for start in range(0, n * per, chunk):
        which = np.arange(start, min(n * per, start + chunk))  # flat element indices
        row, col = which // per, which % per
        stack = np.repeat(x.reshape(n, per)[row][None], 2, axis=0)  # 2, B, per
        stack[0, np.arange(len(which)), col] += eps
        stack[1, np.arange(len(which)), col] -= eps
        out = np.asarray(_stacked(f, stack.reshape(2 * len(which), *x.shape[1:]), np.tile(row, 2)),
                         dtype=np.float64)
        out = out.reshape(2, len(which), -1)
        weights = dout.reshape(n, -1)[row]  # the upstream gradient of each element's row
        grad[which] = np.sum((out[0] - out[1]) * weights, axis=1) / (2 * eps)
    return grad.reshape(x.shape)


def directional_errors(f: Callable, x: np.ndarray, dout: np.ndarray, dx: np.ndarray,
                       rng: np.random.Generator, directions: int = DIRECTIONS,
                       eps: float = EPS, rows: bool = False) -> float:
    """Worst relative error of ``<dx, u>`` against the numerical directional derivative; a
    direction that disagrees is measured again with the smaller ``KINK_STEPS``."""
    x = np.asarray(x, dtype=np.float64)
    us = [rng.standard_normal(x.shape) for _ in range(directions)]
    us = [u / np.linalg.norm(u) for u in us]
    dx = np.asarray(dx, dtype=np.float64)
    worst = 0.0
    for u, numeric in zip(us, _directional(f, x, dout, us, eps, rows)):
        analytic = float(np.sum(dx * u))
        error = abs(numeric - analytic) / max(abs(numeric), 1.0)
        for step in KINK_STEPS if error > GRAD_RTOL else ():
            again = _directional(f, x, dout, [u], step, rows)[0]
            error = min(error, abs(again - analytic) / max(abs(again), 1.0))
        worst = max(worst, error)
    return worst


def _directional(f: Callable, x: np.ndarray, dout: np.ndarray, us: list, eps: float,
                 rows: bool) -> list[float]:
    """``(g(x + eps u) - g(x - eps u)) / 2 eps`` for each ``u``; with ``rows``, as one stack."""
    if rows and x.ndim >= 1 and x.size * 2 * len(us) * 8 <= STACK_BYTES:
        # every x + eps u and x - eps u as rows of one stack: one call of f
        stack = np.concatenate([x + s * eps * u for u in us for s in (1.0, -1.0)])
        index = np.tile(np.arange(x.shape[0]), 2 * len(us))
        out = np.asarray(_stacked(f, stack, index), dtype=np.float64).reshape(2 * len(us), -1)
        values = out @ np.asarray(dout, dtype=np.float64).reshape(-1)
        return list((values[0::2] - values[1::2]) / (2 * eps))
    g = _scalar(f, dout)
    return [(g(x + eps * u) - g(x - eps * u)) / (2 * eps) for u in us]


def gradient_error(f: Callable, x: np.ndarray, dout: np.ndarray, dx: np.ndarray,
                   rng: np.random.Generator, rows: bool = False) -> float:
    """Relative error of a learner's ``dx`` for ``<dout, f(x)>``: full or directional."""
    if x.size > FULL_LIMIT or (not rows and 2 * x.size * np.size(dout) > FULL_WORK):
        return directional_errors(f, x, dout, dx, rng, rows=rows)
    got = np.asarray(dx, dtype=np.float64)
    best = numerical_gradient(f, x, dout, rows=rows)
    error = rel_error(got, best) if got.shape == best.shape else np.inf
    for step in KINK_STEPS if error > GRAD_RTOL and got.shape == best.shape else ():
        again = numerical_gradient(f, x, dout, eps=step, rows=rows)
        best = np.where(np.abs(again - got) < np.abs(best - got), again, best)  # per entry
        error = rel_error(got, best)
    return error


def upstream(rng: np.random.Generator, shape) -> np.ndarray:
    """A random upstream gradient, bounded away from zero and never all-equal."""
    signs = rng.choice([-1.0, 1.0], size=shape)
    return signs * rng.uniform(0.5, 1.5, size=shape)
