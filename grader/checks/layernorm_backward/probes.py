"""Inputs, known-wrong answers and behavioural probes for the layernorm_backward checks.

Shapes: x, y, dy, dx (N, D); gamma, beta, dgamma, dbeta (D,); mean, rstd (N,).

- Inputs: rows with their own offsets and spreads (per-row statistics differ from the
  batch's), gamma away from 0, and near-constant rows (exactly constant, variance far below
  eps, about eps, above it).
- Trap forms: each known-wrong answer on the very inputs of a check, read off the
  reference's own answers where possible (a wrong rstd put back into the reference's
  backward, BatchNorm as the reference on x transposed).
- Probes, run only after a check has failed, to name what a formula match did not: the
  forward on rows of known variance with a large eps; the backward at eps = 0 with the
  other rows changed (a row's dx must not move), and its two properties dx . 1 = 0 and
  dx . x-hat = 0; dgamma and dbeta with the batch repeated twice (a sum doubles).
"""
from __future__ import annotations

import re

import numpy as np

from backprop_traps.grader.engine.context import ATOL, RTOL
from backprop_traps.grader.engine.gradcheck import upstream
from backprop_traps.grader.engine.question import Fail

FWD, BWD = "layernorm_forward", "layernorm_backward"
OUTPUTS = ("y", "mean", "rstd")      # the forward's answer, in order
GRADS = ("dx", "dgamma", "dbeta")    # the backward's answer, in order
EPS = 1e-5                           # PyTorch's default

# The forward probe: 3 rows of 4 values with biased variances 1, 3 and 3.5; a large eps, so
# that the unbiased variance, eps outside the square root and no eps give distinct rstd.
PROBE_X = np.array([[-1.0, 1.0, -1.0, 1.0], [0.0, 0.0, 0.0, 4.0], [1.0, 2.0, 3.0, 6.0]])
PROBE_VAR = np.array([1.0, 3.0, 3.5])
PROBE_EPS = 0.5
PROBE_SHOWN = ("a probe, rows [-1 1 -1 1], [0 0 0 4] and [1 2 3 6] (biased variances 1, 3 "
               "and 3.5) with eps = 0.5")


def _fmt(values) -> str:
    return np.array2string(np.asarray(values), precision=4, suppress_small=True, max_line_width=100)


# -- inputs ----------------------------------------------------------------------------------
def rows(rng, n, d):
    """x (N, D): every row its own offset in [-3, 3] and spread in [0.5, 2]."""
    offset = rng.uniform(-3.0, 3.0, size=(n, 1))
    spread = rng.uniform(0.5, 2.0, size=(n, 1))
    return offset + spread * rng.standard_normal((n, d))


def params(rng, d):
    """(gamma, beta), each (D,); |gamma| in [0.5, 1.5], both signs."""
    gamma = rng.choice([-1.0, 1.0], size=d) * rng.uniform(0.5, 1.5, size=d)
    return gamma, rng.standard_normal(d)


def near_constant_rows(rng, d):
    """5 rows of D values: exactly constant (the offset is exact in binary, so the variance is
    exactly 0), spread 1e-5 (variance ~1e-10, far below eps = 1e-5), spread 3e-3 (variance
    ~eps), spread 1e-2, and an ordinary row."""
    offsets = np.array([-1.25, 2.5, -0.75, 1.5, 0.5])[:, None]
    spreads = np.array([0.0, 1e-5, 3e-3, 1e-2, 1.0])[:, None]
    return offsets + spreads * rng.standard_normal((5, d))


# -- recognising a trap by its value ------------------------------------------------------------


_BROADCAST = re.compile(r"could not be broadcast together with shapes "
                        r"\((\d+),(\d+)\) \((\d+),\)|\((\d+),\) \((\d+),(\d+)\)")


def broadcast_slip(message: str) -> bool:
    """numpy refusing an (N, D) array against N per-row values: a flat (N,) statistic."""
    m = _BROADCAST.search(message)
    return bool(m) and (m.group(1) == m.group(3) if m.group(1) else m.group(4) == m.group(5))


# -- probes: what the learner's functions do on purpose-built inputs --------------------------
def _answer(ctx, fn, args, index, shape):
    """The learner's ``fn(*args)[index]`` if it is a finite array of ``shape``, else None;
    a broadcast slip is returned as the string "broadcast"."""
    try:
        got = ctx.call(fn, *args)
    except Fail as failure:
        return "broadcast" if broadcast_slip(failure.feedback) else None
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        return None
    value = got[index]
    ok = isinstance(value, np.ndarray) and value.shape == shape and value.dtype.kind in "fiu"
    return value.astype(np.float64) if ok and np.all(np.isfinite(value)) else None


def diagnose_forward(ctx):
    """(trap or None, what the probe showed or None) for a failing forward."""
    n, d = PROBE_X.shape
    args = (PROBE_X.copy(), np.ones(d), np.zeros(d), PROBE_EPS)
    for index in (1, 2):  # mean, rstd: one per feature means the wrong axis
        if _answer(ctx, FWD, args, index, (d,)) is not None:
            return "wrong-axis", (f"On {PROBE_SHOWN}, your forward returns {d} values of "
                                  f"`{OUTPUTS[index]}`, one per feature, not one per row.")
    rstd = _answer(ctx, FWD, args, 2, (n,))
    if isinstance(rstd, str):
        return "wrong-axis", (f"On {PROBE_SHOWN}, your forward cannot broadcast an (N, D) array "
                              "against N per-row values.")
    if rstd is None:
        return None, None
    eps, right = PROBE_EPS, ctx.ref.layernorm_forward(*args)[2]
    forms = {"unbiased-variance": 1.0 / np.sqrt(PROBE_VAR * d / (d - 1) + eps),
             "eps-outside-sqrt": 1.0 / (np.sqrt(PROBE_VAR) + eps),
             "eps-missing": 1.0 / np.sqrt(PROBE_VAR)}
    seen = f"On {PROBE_SHOWN}, your rstd is {_fmt(rstd)}; it should be {_fmt(right)}."
    for trap, value in forms.items():
        if np.allclose(rstd, value, rtol=RTOL, atol=ATOL):
            return trap, seen
    if np.allclose(rstd, np.sqrt(PROBE_VAR + eps), rtol=RTOL, atol=ATOL):
        return None, seen + " Yours is the standard deviation; rstd is its reciprocal."
    if np.allclose(rstd, 1.0 / np.sqrt(PROBE_VAR + EPS), rtol=RTOL, atol=ATOL):
        return None, seen + " Yours uses eps = 1e-5 whatever eps it is given: use the argument."
    return None, None


def broken_property(dx, dy, x, gamma, mean, rstd):
    """(kind, sentence) for a finite (N, D) ``dx`` computed at eps = 0 that breaks dx . 1 = 0
    ("ones") or dx . x-hat = 0 ("xhat-1": the variance's path missing; "xhat-unbiased":
    divided by D - 1; "xhat": other), else None."""
    if not (isinstance(dx, np.ndarray) and dx.shape == x.shape and dx.dtype.kind in "fiu"
            and np.all(np.isfinite(dx))):
        return None
    n, d = x.shape
    xhat = (x - mean[:, None]) * rstd[:, None]               # N, D; sum of squares D per row
    g = dy * gamma                                           # N, D
    tol = 1e-7 * (1.0 + rstd * np.abs(g).sum(axis=1))        # N; the size of each row's terms
    sums = dx.sum(axis=1)                                    # N
    if np.any(np.abs(sums) > tol):
        return "ones", (f"its rows sum to {_fmt(sums)}, not 0. Adding a constant to a row of x "
                        "changes no output, so dx has no component along the ones vector.")
    dots = (dx * xhat).sum(axis=1)                           # N
    if np.all(np.abs(dots) <= tol * np.sqrt(d)):
        return None
    ratio = dots / (rstd * (g * xhat).sum(axis=1))
    kind = ("xhat-1" if np.allclose(ratio, 1.0, rtol=1e-6) else
            "xhat-unbiased" if d > 1 and np.allclose(ratio, -1.0 / (d - 1), rtol=1e-6) else "xhat")
    return kind, (f"its rows' dot products with x-hat are {_fmt(dots)}, not 0. With eps = 0, "
                  "scaling a row of x about its mean changes no output, so each row of dx is "
                  "orthogonal to x-hat.")


PROPERTY_TRAPS = {"ones": "stats-as-constants", "xhat-1": "stats-as-constants",
                  "xhat-unbiased": "unbiased-variance"}  # the trap each broken property means


def diagnose_backward(ctx, rows_only=False):
    """(trap or None, what the probe showed or None) for a failing dx, at eps = 0: does row 0's
    dx move when only the other rows change (rows mixed), and (unless ``rows_only``) which
    property breaks."""
    rng = np.random.default_rng([ctx.seed, 11])
    n, d = 4, 6
    x, (gamma, _), dy = rows(rng, n, d), params(rng, d), upstream(rng, (n, d))
    x2, dy2 = x.copy(), dy.copy()
    x2[1:], dy2[1:] = rows(rng, n - 1, d), upstream(rng, (n - 1, d))
    answers = []
    for xs, dys in ((x, dy), (x2, dy2)):
        _, mean, rstd = ctx.ref.layernorm_forward(xs, gamma, np.zeros(d), 0.0)
        dx = _answer(ctx, BWD, (dys, xs, gamma, mean, rstd), 0, (n, d))
        if isinstance(dx, str):
            return "wrong-axis", (f"On a probe of {n} rows of {d} features, your backward cannot "
                                  "broadcast an (N, D) array against N per-row values.")
        if dx is None:
            return None, None
        answers.append((dx, mean, rstd))
    (dx, mean, rstd), (dx2, _, _) = answers
    if not np.allclose(dx[0], dx2[0], rtol=RTOL, atol=ATOL):
        return "wrong-axis", ("On a probe where only rows 1 to 3 of x and dy change, your dx for "
                              "row 0 changes too: LayerNorm's rows are independent, and each "
                              "row's dx depends on that row alone.")
    broken = None if rows_only else broken_property(dx, dy, x, gamma, mean, rstd)
    if broken is None:
        return None, None
    kind, sentence = broken
    return property_trap(kind, dx, dy, x, gamma, mean, rstd), \
        f"On a probe with eps = 0, your dx breaks a property: {sentence}"


def property_trap(kind, dx, dy, x, gamma, mean, rstd):
    """The trap a broken property means, when this dx is that mistake: rows that do not sum to
    zero are stats-as-constants only if dx has no path through the mean at all (any other wrong
    entry breaks the sum too); the x-hat ratios are exact already."""
    from backprop_traps.grader.engine.statistics_path import mean_path_lost
    if kind != "ones":
        return PROPERTY_TRAPS.get(kind)
    r = rstd[:, None]                                        # N, 1
    return "stats-as-constants" if mean_path_lost(dx, dy * gamma, r * (x - mean[:, None]), r, axis=1) else None


def diagnose_param(ctx, index):
    """(trap or None, what the probe showed) for a failing dgamma (1) or dbeta (2): the same
    batch given twice must double a sum over the batch."""
    rng = np.random.default_rng([ctx.seed, 12])
    n, d = 3, 5
    x, (gamma, beta), dy = rows(rng, n, d), params(rng, d), upstream(rng, (n, d))
    values = []
    for times in (1, 2):
        xs, dys = np.tile(x, (times, 1)), np.tile(dy, (times, 1))
        _, mean, rstd = ctx.ref.layernorm_forward(xs, gamma, beta, EPS)
        value = _answer(ctx, BWD, (dys, xs, gamma, mean, rstd), index, (d,))
        if value is None or isinstance(value, str):
            return None, None
        values.append(value)
    once, twice = values
    if np.allclose(once, twice, rtol=RTOL, atol=ATOL) and not np.allclose(once, 0.0, atol=ATOL):
        return "dgamma-not-summed", (f"On a probe, the same {n} rows given twice leave your "
                                     f"`{GRADS[index]}` unchanged, where a sum over the batch "
                                     "doubles.")
    return None, None


# -- the smallest failing example, for the feedback ----------------------------------------------
def _small(rng, size):
    x = np.round(rows(rng, *size), 2)
    gamma, beta = params(rng, size[1])
    return x, np.round(gamma, 2), np.round(beta, 2)


def forward_example(ctx, index, eps):
    """Text: the smallest input where the learner's forward output ``index`` is wrong."""
    def build(rng, size):
        x, gamma, beta = _small(rng, size)
        return {"x": x, "gamma": gamma, "beta": beta, "eps": eps}
    return ctx.smallest_failure(FWD, build, [(1, 3), (2, 3), (2, 4)],
                                lambda *a: ctx.ref.layernorm_forward(*a)[index],
                                pick=lambda v: v[index], name=OUTPUTS[index])


def backward_example(ctx, index, eps):
    """A callable giving the smallest input where the learner's gradient ``index`` is wrong."""
    def build(rng, size):
        x, gamma, beta = _small(rng, size)
        _, mean, rstd = ctx.ref.layernorm_forward(x, gamma, beta, eps)
        dy = np.round(upstream(rng, x.shape), 1)
        return {"dy": dy, "x": x, "gamma": gamma, "mean": mean, "rstd": rstd}
    return lambda: ctx.smallest_failure(BWD, build, [(1, 3), (2, 3), (3, 4)],
                                        lambda *a: ctx.ref.layernorm_backward(*a)[index],
                                        pick=lambda v: v[index], name=GRADS[index])
