"""Numerical gradient checks in float64.

The backward of a learner is checked against central differences of the *reference*
forward, contracted with a random upstream gradient ``dout`` (never all-ones, which hides
transposes and mixed-up indices): the scalar is ``<dout, f(x)>`` and its gradient is the
vector-Jacobian product the backward must return.

- Small inputs (``x.size <= FULL_LIMIT``) get the full central-difference gradient.
- Larger inputs get random-direction checks, as torch.autograd.gradcheck's fast mode
  does: for random unit ``u``, ``<dx, u>`` must equal ``(g(x + eps u) - g(x - eps u)) / 2 eps``.
  The cost is two forwards per direction, whatever the size.

Tolerances (float64, ``EPS = 1e-6``): central differences have truncation error
``O(eps^2 f''')`` and rounding error about ``1e-16 |g| / eps``, i.e. about 1e-10 relative
for O(1) values, so ``GRAD_RTOL = 1e-6`` leaves four orders of margin while any real
mistake (a missing factor, a lost contribution) is off by ``1e-2`` or more.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

EPS = 1e-6
FULL_LIMIT = 512
GRAD_RTOL = 1e-6
DIRECTIONS = 4


def rel_error(got: np.ndarray, expected: np.ndarray) -> float:
    """``max |got - expected| / max(max |expected|, 1)``: relative for big values,
    absolute for small ones, so an all-near-zero gradient cannot pass by dividing by ~0."""
    got = np.asarray(got, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    scale = max(float(np.max(np.abs(expected), initial=0.0)), 1.0)
    return float(np.max(np.abs(got - expected), initial=0.0)) / scale


def _scalar(f: Callable, dout: np.ndarray) -> Callable[[np.ndarray], float]:
    return lambda x: float(np.sum(dout * f(x)))


def numerical_gradient(f: Callable, x: np.ndarray, dout: np.ndarray, eps: float = EPS) -> np.ndarray:
    """Full central-difference gradient of ``<dout, f(x)>`` with respect to ``x``."""
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


def directional_errors(f: Callable, x: np.ndarray, dout: np.ndarray, dx: np.ndarray,
                       rng: np.random.Generator, directions: int = DIRECTIONS,
                       eps: float = EPS) -> float:
    """Worst relative error of ``<dx, u>`` against the numerical directional derivative."""
    g = _scalar(f, dout)
    x = np.asarray(x, dtype=np.float64)
    worst = 0.0
    for _ in range(directions):
        u = rng.standard_normal(x.shape)
        u /= np.linalg.norm(u)
        numeric = (g(x + eps * u) - g(x - eps * u)) / (2 * eps)
        analytic = float(np.sum(np.asarray(dx, dtype=np.float64) * u))
        worst = max(worst, abs(numeric - analytic) / max(abs(numeric), 1.0))
    return worst


def gradient_error(f: Callable, x: np.ndarray, dout: np.ndarray, dx: np.ndarray,
                   rng: np.random.Generator) -> float:
    """Relative error of a learner's ``dx`` for ``<dout, f(x)>``: full or directional."""
    if x.size <= FULL_LIMIT:
        return rel_error(dx, numerical_gradient(f, x, dout))
    return directional_errors(f, x, dout, dx, rng)


def upstream(rng: np.random.Generator, shape) -> np.ndarray:
    """A random upstream gradient, bounded away from zero and never all-equal."""
    signs = rng.choice([-1.0, 1.0], size=shape)
    return signs * rng.uniform(0.5, 1.5, size=shape)
