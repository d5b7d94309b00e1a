"""A normalisation's backward without the path through its mean: the mistake LayerNorm (rows)
and BatchNorm (columns) share, recognised one way for both ("stats-as-constants")."""
from __future__ import annotations

import numpy as np


def mean_path_lost(dx, g, xhat, rstd, axis: int) -> bool:
    """Whether ``dx`` is a multiple of ``rstd * g`` plus, along ``axis`` (1: LayerNorm's rows, 0:
    BatchNorm's columns), any multiple of x-hat: a backward with no path through the mean
    (whatever it does with the variance's), as treating the statistics as constants gives. A
    dx that merely fails to sum to zero (a wrong entry) is not that mistake."""
    dx, rg, xh = (np.asarray(a, dtype=np.float64) for a in (dx, rstd * g, xhat))
    if dx.shape != rg.shape or not np.all(np.isfinite(dx)):
        return False
    if axis == 0:
        dx, rg, xh = dx.T, rg.T, xh.T
    norms = np.maximum((xh * xh).sum(axis=1, keepdims=True), 1e-300)

    def project(a):  # each row with its x-hat component removed
        return a - xh * (a * xh).sum(axis=1, keepdims=True) / norms
    pd, pg = project(dx), project(rg)
    scale = float((pg * pg).sum())
    if scale == 0.0:
        return False
    c = float((pd * pg).sum()) / scale
    return abs(c) > 1e-9 and float(np.linalg.norm(pd - c * pg)) <= 1e-6 * max(float(np.linalg.norm(dx)), 1e-300)
