"""The attention_backward kernels against the solution notebook's reference, under the simulator.

Loaded by path, so the same file works in this kit and in an instructor's own folder. Small
tiles (T = 4 or 8 rows) so that a handful of tokens already spans several tiles, with a
partial last one; each simulated thread is a Python thread, so the shapes stay small.
"""
import importlib.util
import os
from pathlib import Path

if os.environ.get("BACKPROP_TRAPS_REAL_GPU") != "1":  # before numba.cuda is imported
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from backprop_traps.grader.loading.reference import load_solution  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ref = load_solution("attention_backward", ROOT)
_spec = importlib.util.spec_from_file_location("kernels_attention_backward", ROOT / "kernels" / "attention_backward.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)

CASES = [  # seed, (B, N, D), tile, causal
    (0, (1, 1, 3), 4, True),
    (1, (2, 11, 5), 4, False),
    (2, (2, 11, 5), 4, True),
    (3, (1, 19, 8), 8, True),
]


@pytest.mark.parametrize("seed, shape, tile, causal", CASES)
def test_forward_and_backward_match_the_reference(seed, shape, tile, causal):
    rng = np.random.default_rng(seed)
    q, k, v, do = (rng.standard_normal(shape) for _ in range(4))
    o, lse = kernels.attention_forward(q, k, v, causal, tile=tile)
    ref_o, ref_lse = ref.attention_forward(q, k, v, causal)
    np.testing.assert_allclose(o, ref_o, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lse, ref_lse, rtol=1e-10, atol=1e-12)
    grads = kernels.attention_backward(do, q, k, v, ref_o, ref_lse, causal, tile=tile)
    for got, want in zip(grads, ref.attention_backward(do, q, k, v, ref_o, ref_lse, causal)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_huge_scores_stay_finite_and_right():
    """Scores of +-1e4 (a shared key coordinate): the online max keeps every exponent <= 0."""
    rng = np.random.default_rng(4)
    q, k, v, do = (rng.standard_normal((1, 9, 4)) for _ in range(4))
    k[:, :, 0] = 1.0
    q[:, :, 0] = rng.choice([-1.0, 1.0], size=(1, 9)) * 2e4
    o, lse = kernels.attention_forward(q, k, v, True, tile=4)
    ref_o, ref_lse = ref.attention_forward(q, k, v, True)
    np.testing.assert_allclose(o, ref_o, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(lse, ref_lse, rtol=1e-12)
    grads = kernels.attention_backward(do, q, k, v, ref_o, ref_lse, True, tile=4)
    for got, want in zip(grads, ref.attention_backward(do, q, k, v, ref_o, ref_lse, True)):
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-9)


def test_float32_and_the_default_tile():
    rng = np.random.default_rng(5)
    q, k, v, do = (rng.standard_normal((1, 10, 4)) for _ in range(4))
    o, lse = kernels.attention_forward(*(a.astype(np.float32) for a in (q, k, v)), False)
    assert o.dtype == np.float32 and kernels.default_tile(4, np.float32) == 64
    ref_o, ref_lse = ref.attention_forward(q, k, v, False)
    np.testing.assert_allclose(o, ref_o, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(lse, ref_lse, rtol=1e-4, atol=1e-5)
    assert kernels.default_tile(64, np.float64) == 8  # six (16, 65) float64 arrays would not fit in 48 KiB
    assert kernels.default_tile(64, np.float32) == 16
