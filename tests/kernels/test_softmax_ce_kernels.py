"""The fused softmax + cross-entropy kernel against the solution notebook's reference.

Runs under the Numba CUDA simulator (tests/conftest.py); shapes stay small and blocks are
32 or 64 threads so every launch simulates at most about 2K threads.
"""
import numpy as np
import pytest
from numba import cuda

from backprop_traps.grader.loading.reference import load_solution
from backprop_traps.kernels.softmax_ce import softmax_cross_entropy, softmax_cross_entropy_device

ref = load_solution("softmax_ce")


def random_problem(seed, n_rows, n_classes, scale=3.0):
    rng = np.random.default_rng(seed)
    logits = rng.uniform(-scale, scale, size=(n_rows, n_classes))  # N, K
    labels = rng.integers(0, n_classes, size=n_rows).astype(np.int64)  # N
    return logits, labels


def assert_matches_reference(logits, labels, loss, dlogits, rtol=1e-10, atol=1e-13):
    expected_loss, expected_dlogits = ref.softmax_cross_entropy(logits, labels)
    assert isinstance(loss, float)
    np.testing.assert_allclose(loss, expected_loss, rtol=rtol, atol=atol)
    np.testing.assert_allclose(dlogits, expected_dlogits, rtol=rtol, atol=atol)


@pytest.mark.parametrize("seed, n_rows, n_classes, threads_per_block", [
    (0, 1, 1, 32),     # K = 1: loss 0, gradient 0
    (1, 3, 2, 32),     # K = 2: most threads hold an empty (max, sum) pair
    (2, 1, 40, 32),    # N = 1, K not a multiple of the block
    (3, 4, 33, 32),    # one column past a full block
    (4, 5, 100, 32),   # several columns per thread
    (5, 3, 130, 64),   # a larger block, K not a multiple of it
])
def test_matches_reference_on_random_shapes(seed, n_rows, n_classes, threads_per_block):
    logits, labels = random_problem(seed, n_rows, n_classes)
    loss, dlogits = softmax_cross_entropy(logits, labels, threads_per_block=threads_per_block)
    assert_matches_reference(logits, labels, loss, dlogits)


def test_huge_logits_stay_finite():
    logits, labels = random_problem(6, 4, 50, scale=1e4)
    logits[0, :] = -1e4
    logits[0, 7] = 1e4  # row 0: the max far above every other logit ...
    labels[0] = 3       # ... and the label 2e4 below it: loss 2e4, not inf
    logits[1, :] = 1e4  # row 1: every logit equal and huge
    logits[2, :] -= 2e4  # row 2: every logit hugely negative (exp underflows without the max)
    loss, dlogits = softmax_cross_entropy(logits, labels, threads_per_block=32)
    assert np.isfinite(loss) and np.all(np.isfinite(dlogits))
    assert_matches_reference(logits, labels, loss, dlogits)


def test_float32_math_stays_float32_and_close():
    logits, labels = random_problem(7, 3, 45, scale=1e4)
    loss, dlogits = softmax_cross_entropy(logits.astype(np.float32), labels, threads_per_block=32)
    assert dlogits.dtype == np.float32
    assert_matches_reference(logits, labels, loss, dlogits, rtol=1e-4, atol=1e-6)


def test_inplace_overwrites_the_device_logits():
    logits, labels = random_problem(8, 3, 37)
    d_logits = cuda.to_device(logits)
    d_losses, d_dlogits = softmax_cross_entropy_device(
        d_logits, cuda.to_device(labels), inplace=True, threads_per_block=32)
    assert d_dlogits is d_logits, "in place: dlogits must be the logits' own buffer"
    losses = d_losses.copy_to_host()
    assert_matches_reference(logits, labels, float(losses.mean()), d_logits.copy_to_host())


def test_inplace_host_call_matches_and_leaves_input_alone():
    logits, labels = random_problem(9, 2, 70, scale=1e4)
    before = logits.copy()
    loss, dlogits = softmax_cross_entropy(logits, labels, inplace=True, threads_per_block=64)
    assert np.array_equal(logits, before), "the caller's numpy array must not change"
    assert_matches_reference(logits, labels, loss, dlogits)


def test_block_size_must_be_a_power_of_two():
    logits, labels = random_problem(10, 1, 4)
    with pytest.raises(ValueError, match="power of two"):
        softmax_cross_entropy(logits, labels, threads_per_block=48)


def test_a_label_outside_the_classes_is_refused_by_the_host_and_nan_on_the_device():
    logits = np.random.default_rng(9).normal(size=(3, 5))
    for bad in (-1, 5):
        with pytest.raises(ValueError, match=r"labels must lie in \[0, 5\)"):
            softmax_cross_entropy(logits, np.array([0, bad, 2]))
        d_losses, _ = softmax_cross_entropy_device(
            cuda.to_device(logits), cuda.to_device(np.array([0, bad, 2])), threads_per_block=8)
        losses = d_losses.copy_to_host()
        assert np.isnan(losses[1]) and np.isfinite(losses[[0, 2]]).all()  # defined, never stale memory
