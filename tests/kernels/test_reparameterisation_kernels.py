"""The Gumbel-softmax kernels against the solution notebook's reference, under the simulator.

Loaded by path, so the same file works in this kit and in an instructor's own folder.
Shapes stay small and blocks are 32 or 64 threads, so a launch simulates at most ~300
threads. The file takes about 4 s under the simulator (8 tests, measured on a shared,
busy 2-core machine).
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
ref = load_solution("reparameterisation", ROOT)
_spec = importlib.util.spec_from_file_location("kernels_reparameterisation", ROOT / "kernels" / "reparameterisation.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)


def problem(seed, n, k, scale=2.0):
    rng = np.random.default_rng(seed)
    logits = rng.uniform(-2, 2, size=(n, 1)) + scale * rng.standard_normal((n, k))  # N, K
    gumbel = rng.gumbel(size=(n, k))  # N, K
    dy = rng.standard_normal((n, k))  # N, K
    return logits, gumbel, dy


def assert_matches(logits, gumbel, dy, tau, tpb, rtol=1e-11, atol=1e-13):
    y = kernels.gumbel_softmax_forward(logits, gumbel, tau, threads_per_block=tpb)
    want = ref.gumbel_softmax_forward(logits, gumbel, tau)
    np.testing.assert_allclose(y, want, rtol=rtol, atol=atol)
    dlogits = kernels.gumbel_softmax_backward(dy, want, tau, threads_per_block=tpb)
    np.testing.assert_allclose(dlogits, ref.gumbel_softmax_backward(dy, want, tau), rtol=rtol, atol=atol)
    return y, dlogits


@pytest.mark.parametrize("seed, n, k, tau, tpb", [
    (0, 2, 1, 0.7, 32),    # K = 1: y = 1, dlogits = 0
    (1, 3, 5, 0.5, 32),    # K < TPB: most threads hold an empty (max, sum) pair
    (2, 2, 33, 2.0, 32),   # one column past a full block
    (3, 4, 70, 1.0, 32),   # several columns per thread
    (4, 3, 130, 0.3, 64),  # a larger block, K not a multiple of it
])
def test_matches_reference_on_random_shapes(seed, n, k, tau, tpb):
    logits, gumbel, dy = problem(seed, n, k)
    y, dlogits = assert_matches(logits, gumbel, dy, tau, tpb)
    assert np.allclose(y.sum(axis=1), 1.0) and np.allclose(dlogits.sum(axis=1), 0.0, atol=1e-12)


def test_small_temperature_and_huge_logits_stay_finite():
    logits, gumbel, dy = problem(5, 3, 40, scale=10.0)
    logits[0, 7] = 60.0               # 60 / 0.01 = 6000: exp would overflow without the max
    logits[1] = 2e4                   # a whole row huge and tied: y uniform
    gumbel[1] = 0.0
    y, _ = assert_matches(logits, gumbel, dy, 0.01, 32)
    assert np.all(np.isfinite(y)) and np.isclose(y[0, 7], 1.0) and np.allclose(y[1], 1 / 40)


def test_float32_math_stays_float32_and_close():
    logits, gumbel, dy = problem(6, 3, 45)
    y = kernels.gumbel_softmax_forward(logits.astype(np.float32), gumbel, 0.5, threads_per_block=32)
    assert y.dtype == np.float32
    want = ref.gumbel_softmax_forward(logits, gumbel, 0.5)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-6)
    dlogits = kernels.gumbel_softmax_backward(dy, want.astype(np.float32), 0.5, threads_per_block=32)
    assert dlogits.dtype == np.float32
    np.testing.assert_allclose(dlogits, ref.gumbel_softmax_backward(dy, want, 0.5), rtol=1e-4, atol=1e-5)


def test_block_size_must_be_a_power_of_two():
    logits, gumbel, _ = problem(7, 1, 4)
    with pytest.raises(ValueError, match="power of two"):
        kernels.gumbel_softmax_forward(logits, gumbel, 1.0, threads_per_block=48)
