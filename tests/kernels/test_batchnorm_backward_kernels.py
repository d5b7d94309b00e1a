"""The BatchNorm kernels against the solution notebook's reference, under the simulator.

Loaded by path, so the same file works in this kit and in an instructor's own folder.
Blocks stay small (F = 4 or 8 features, L = 2 or 4 row lanes), so a launch simulates at most
a few dozen threads; D not a multiple of F leaves threads without a feature, which must still
reach every barrier.
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
ref = load_solution("batchnorm_backward", ROOT)
_spec = importlib.util.spec_from_file_location("kernels_batchnorm_backward", ROOT / "kernels" / "batchnorm_backward.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)


def problem(seed, n, d):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, 3, size=(1, d)) + rng.uniform(0.5, 2, size=(1, d)) * rng.standard_normal((n, d))
    gamma, beta = rng.standard_normal(d), rng.standard_normal(d)       # D
    running_mean, running_var = rng.standard_normal(d), rng.uniform(0.5, 2, size=d)  # D
    dy = rng.standard_normal((n, d))                                   # N, D
    return x, gamma, beta, running_mean, running_var, dy


@pytest.mark.parametrize("seed, n, d, features, lanes", [
    (0, 2, 1, 4, 2),    # the smallest training batch, one feature: most threads idle
    (1, 5, 3, 4, 4),    # more lanes than some features have rows to share
    (2, 9, 10, 4, 2),   # D not a multiple of F: the last block half empty
    (3, 17, 8, 8, 4),   # several rows per lane
])
def test_matches_reference_in_both_modes(seed, n, d, features, lanes):
    x, gamma, beta, rm, rv, dy = problem(seed, n, d)
    for training in (True, False):
        got = kernels.batchnorm_forward(x, gamma, beta, rm, rv, training, 0.1, 1e-5,
                                        features_per_block=features, row_lanes=lanes)
        want = ref.batchnorm_forward(x, gamma, beta, rm, rv, training, 0.1, 1e-5)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-12)
    _, mean, rstd, _, _ = ref.batchnorm_forward(x, gamma, beta, rm, rv, True, 0.1, 1e-5)
    got = kernels.batchnorm_backward(dy, x, gamma, mean, rstd, features_per_block=features, row_lanes=lanes)
    for g, w in zip(got, ref.batchnorm_backward(dy, x, gamma, mean, rstd)):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-11)


def test_columns_of_dx_sum_to_zero_and_backward_is_deterministic():
    x, gamma, beta, rm, rv, dy = problem(4, 12, 6)
    _, mean, rstd, _, _ = ref.batchnorm_forward(x, gamma, beta, rm, rv, True, 0.1, 0.0)
    first = kernels.batchnorm_backward(dy, x, gamma, mean, rstd, features_per_block=4, row_lanes=4)
    again = kernels.batchnorm_backward(dy, x, gamma, mean, rstd, features_per_block=4, row_lanes=4)
    assert all(np.array_equal(a, b) for a, b in zip(first, again)), "no atomics: same bits every run"
    assert np.allclose(first[0].sum(axis=0), 0.0, atol=1e-12)
    assert np.allclose((first[0] * (x - mean) * rstd).sum(axis=0), 0.0, atol=1e-11)


def test_training_refuses_a_batch_of_one_and_evaluation_takes_it():
    x, gamma, beta, rm, rv, _ = problem(5, 1, 3)
    with pytest.raises(ValueError, match="more than one example"):
        kernels.batchnorm_forward(x, gamma, beta, rm, rv, True, 0.1, 1e-5)
    got = kernels.batchnorm_forward(x, gamma, beta, rm, rv, False, 0.1, 1e-5, features_per_block=4, row_lanes=2)
    for g, w in zip(got, ref.batchnorm_forward(x, gamma, beta, rm, rv, False, 0.1, 1e-5)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_float32_math_stays_float32_and_close():
    x, gamma, beta, rm, rv, dy = problem(6, 7, 5)
    y, mean, rstd, new_mean, new_var = kernels.batchnorm_forward(
        x.astype(np.float32), gamma, beta, rm, rv, True, 0.1, 1e-5, features_per_block=4, row_lanes=2)
    assert y.dtype == mean.dtype == new_var.dtype == np.float32
    want = ref.batchnorm_forward(x, gamma, beta, rm, rv, True, 0.1, 1e-5)
    for g, w in zip((y, mean, rstd, new_mean, new_var), want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    dx, dgamma, dbeta = kernels.batchnorm_backward(dy, x.astype(np.float32), gamma, mean, rstd,
                                                   features_per_block=4, row_lanes=2)
    assert dx.dtype == dgamma.dtype == np.float32
    for g, w in zip((dx, dgamma, dbeta), ref.batchnorm_backward(dy, x, gamma, *want[1:3])):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_row_lanes_must_be_a_power_of_two():
    x, gamma, beta, rm, rv, _ = problem(7, 3, 2)
    with pytest.raises(ValueError, match="power of two"):
        kernels.batchnorm_forward(x, gamma, beta, rm, rv, True, 0.1, 1e-5, row_lanes=3)


# -- version 2: the two-stage column reduction with 128-bit loads (kernels/batchnorm_backward_v2.py)
_spec2 = importlib.util.spec_from_file_location("kernels_batchnorm_backward_v2",
                                                ROOT / "kernels" / "batchnorm_backward_v2.py")
v2 = importlib.util.module_from_spec(_spec2)
_spec2.loader.exec_module(v2)


@pytest.mark.parametrize("seed, n, d, parts", [
    (10, 2, 4, 1),     # the smallest batch: 30 of 32 lanes without a row
    (11, 21, 36, 3),   # a second, mostly empty feature tile; rows split over 3 parts
    (12, 9, 8, 4),     # more parts than the rows fill (an empty last part)
])
def test_version_2_matches_the_reference_in_both_modes(seed, n, d, parts):
    x, gamma, beta, rm, rv, dy = problem(seed, n, d)
    scratch = {"partials": v2.cuda.device_array(3 * parts * d), "coef": v2.cuda.device_array(3 * d)}
    d_x, d_y = v2.cuda.to_device(x), v2.cuda.device_array((n, d))
    vectors = [v2.cuda.to_device(a) for a in (gamma, beta, rm, rv)]
    outs = [v2.cuda.device_array(d) for _ in range(4)]
    v2.train_forward_device(d_x, *vectors, 0.1, 1e-5, d_y, *outs, scratch)
    want = ref.batchnorm_forward(x, gamma, beta, rm, rv, True, 0.1, 1e-5)
    for g, w in zip([d_y] + outs, want):
        np.testing.assert_allclose(g.copy_to_host(), w, rtol=1e-11, atol=1e-12)
    got = v2.batchnorm_forward(x, gamma, beta, rm, rv, False, 0.1, 1e-5)
    for g, w in zip(got, ref.batchnorm_forward(x, gamma, beta, rm, rv, False, 0.1, 1e-5)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    _, mean, rstd, _, _ = want
    d_dx, d_dgamma, d_dbeta = v2.cuda.device_array((n, d)), v2.cuda.device_array(d), v2.cuda.device_array(d)
    v2.train_backward_device(v2.cuda.to_device(dy), d_x, vectors[0], v2.cuda.to_device(mean), v2.cuda.to_device(rstd),
                             d_dx, d_dgamma, d_dbeta, scratch)
    for g, w in zip((d_dx, d_dgamma, d_dbeta), ref.batchnorm_backward(dy, x, gamma, mean, rstd)):
        np.testing.assert_allclose(g.copy_to_host(), w, rtol=1e-10, atol=1e-11)


def test_version_2_in_float32_and_what_it_refuses():
    x, gamma, beta, rm, rv, dy = problem(13, 7, 12)
    got = v2.batchnorm_forward(x.astype(np.float32), gamma, beta, rm, rv, True, 0.1, 1e-5)
    assert all(a.dtype == np.float32 for a in got)
    want = ref.batchnorm_forward(x, gamma, beta, rm, rv, True, 0.1, 1e-5)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    dx, dgamma, dbeta = v2.batchnorm_backward(dy.astype(np.float32), x.astype(np.float32), gamma, *want[1:3])
    for g, w in zip((dx, dgamma, dbeta), ref.batchnorm_backward(dy, x, gamma, *want[1:3])):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="multiple of 4"):
        v2.batchnorm_forward(x[:, :10], gamma[:10], beta[:10], rm[:10], rv[:10], True, 0.1, 1e-5)
