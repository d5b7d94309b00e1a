"""The LayerNorm kernels against the solution notebook's reference, under the simulator.

Loaded by path, so the same file works in this kit and in an instructor's own folder.
Shapes stay small and blocks are 32 or 64 threads, so a launch simulates at most ~300
threads; G (the backward's blocks) below N gives blocks several rows. The file takes 5 to 9 s
under the simulator (9 tests, measured on a shared, busy 2-core machine).
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
ref = load_solution("layernorm_backward", ROOT)
_spec = importlib.util.spec_from_file_location("kernels_layernorm_backward", ROOT / "kernels" / "layernorm_backward.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)


def problem(seed, n, d):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, 3, size=(n, 1)) + rng.uniform(0.5, 2, size=(n, 1)) * rng.standard_normal((n, d))
    gamma, beta = rng.standard_normal(d), rng.standard_normal(d)  # D
    dy = rng.standard_normal((n, d))  # N, D
    return x, gamma, beta, dy


def assert_matches(x, gamma, beta, dy, eps, tpb, blocks=None, rtol=1e-11, atol=1e-12):
    got = kernels.layernorm_forward(x, gamma, beta, eps, threads_per_block=tpb)
    want = ref.layernorm_forward(x, gamma, beta, eps)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    _, mean, rstd = want
    got = kernels.layernorm_backward(dy, x, gamma, mean, rstd, threads_per_block=tpb, blocks=blocks)
    for g, w in zip(got, ref.layernorm_backward(dy, x, gamma, mean, rstd)):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


@pytest.mark.parametrize("seed, n, d, tpb, blocks", [
    (0, 1, 1, 32, None),   # D = 1: every row constant, dx = 0, dgamma = 0
    (1, 3, 5, 32, None),   # D < TPB: most threads hold an empty Welford state
    (2, 2, 33, 32, None),  # one column past a full block
    (3, 5, 70, 32, 2),     # several columns per thread, several rows per backward block
    (4, 4, 130, 64, 3),    # a larger block; G does not divide N
])
def test_matches_reference_on_random_shapes(seed, n, d, tpb, blocks):
    x, gamma, beta, dy = problem(seed, n, d)
    assert_matches(x, gamma, beta, dy, 1e-5, tpb, blocks)


def test_near_constant_rows_use_eps_inside_the_root():
    rng = np.random.default_rng(5)
    offsets = np.array([-1.25, 2.5, -0.75, 1000.0])[:, None]
    spreads = np.array([0.0, 1e-5, 3e-3, 1e-3])[:, None]  # var 0, ~1e-10, ~eps, and mean 1e3
    x = offsets + spreads * rng.standard_normal((4, 40))
    _, gamma, beta, dy = problem(6, 4, 40)
    y, mean, rstd = kernels.layernorm_forward(x, gamma, beta, 1e-5, threads_per_block=32)
    assert np.allclose(rstd[0], 1 / np.sqrt(1e-5)) and np.allclose(y[0], beta)
    assert_matches(x, gamma, beta, dy, 1e-5, 32, blocks=2, atol=1e-10)


def test_dx_rows_sum_to_zero_and_backward_is_deterministic():
    x, gamma, beta, dy = problem(7, 6, 50)
    _, mean, rstd = ref.layernorm_forward(x, gamma, beta, 0.0)
    first = kernels.layernorm_backward(dy, x, gamma, mean, rstd, threads_per_block=32, blocks=2)
    again = kernels.layernorm_backward(dy, x, gamma, mean, rstd, threads_per_block=32, blocks=2)
    assert all(np.array_equal(a, b) for a, b in zip(first, again)), "no atomics: same bits every run"
    xhat = (x - mean[:, None]) * rstd[:, None]
    assert np.allclose(first[0].sum(axis=1), 0.0, atol=1e-12)
    assert np.allclose((first[0] * xhat).sum(axis=1), 0.0, atol=1e-11)


def test_float32_math_stays_float32_and_close():
    x, gamma, beta, dy = problem(8, 3, 45)
    x32 = x.astype(np.float32)
    y, mean, rstd = kernels.layernorm_forward(x32, gamma, beta, 1e-5, threads_per_block=32)
    assert y.dtype == mean.dtype == rstd.dtype == np.float32
    want = ref.layernorm_forward(x, gamma, beta, 1e-5)
    for g, w in zip((y, mean, rstd), want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    dx, dgamma, dbeta = kernels.layernorm_backward(dy, x32, gamma, mean, rstd, threads_per_block=32)
    assert dx.dtype == dgamma.dtype == np.float32
    for g, w in zip((dx, dgamma, dbeta), ref.layernorm_backward(dy, x, gamma, *want[1:])):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_block_size_must_be_a_power_of_two():
    x, gamma, beta, _ = problem(9, 1, 4)
    with pytest.raises(ValueError, match="power of two"):
        kernels.layernorm_forward(x, gamma, beta, 1e-5, threads_per_block=48)


# -- version 2: 4 features a thread in registers, warp-shuffle sums (kernels/layernorm_backward_v2.py)
_spec2 = importlib.util.spec_from_file_location("kernels_layernorm_backward_v2",
                                                ROOT / "kernels" / "layernorm_backward_v2.py")
v2 = importlib.util.module_from_spec(_spec2)
_spec2.loader.exec_module(v2)


@pytest.mark.parametrize("seed, n, d, blocks", [
    (10, 1, 4, None),    # one thread owns the row, 31 of its warp none
    (11, 5, 36, 2),      # a part-filled warp; several rows a backward block, G does not divide N
    (12, 3, 132, None),  # two warps, the second almost empty: the sums cross warps
])
def test_version_2_matches_the_reference(seed, n, d, blocks):
    x, gamma, beta, dy = problem(seed, n, d)
    want = ref.layernorm_forward(x, gamma, beta, 1e-5)
    for g, w in zip(v2.layernorm_forward(x, gamma, beta, 1e-5), want):
        np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-12)
    _, mean, rstd = want
    for g, w in zip(v2.layernorm_backward(dy, x, gamma, mean, rstd, blocks), ref.layernorm_backward(dy, x, gamma, mean, rstd)):
        np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-12)


def test_version_2_in_float32_far_from_zero_and_what_it_refuses():
    x, gamma, beta, dy = problem(13, 3, 8)
    x = 1000 + 0.1 * (x - x.mean(axis=1, keepdims=True))  # mean 1000, std ~0.1: E[x^2] - E[x]^2 would lose it
    y, mean, rstd = v2.layernorm_forward(x.astype(np.float32), gamma, beta, 1e-5)
    want = ref.layernorm_forward(x, gamma, beta, 1e-5)
    assert y.dtype == np.float32
    np.testing.assert_allclose(rstd, want[2], rtol=1e-3)
    np.testing.assert_allclose(y, want[0], rtol=1e-2, atol=1e-2)
    with pytest.raises(ValueError, match="multiple of 4"):
        v2.layernorm_forward(x[:, :6], gamma[:6], beta[:6], 1e-5)
