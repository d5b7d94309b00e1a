"""The routing_trap kernels against the solution notebook's functions.

Runs under the Numba CUDA simulator (tests/conftest.py) on small shapes: overlapping
windows (k=3 with s=1 and s=2), non-square planes, N and C above 1, leftover rows that no
window covers, and integer-valued inputs full of ties for the first-max rule.
"""
import numpy as np
import pytest

from backprop_traps.grader.loading.reference import load_solution
from backprop_traps.kernels import routing_trap as kern

ref = load_solution("routing_trap")

# (N, C, H, W, k, s); every launch stays under ~2K threads.
SHAPES = [
    (1, 1, 4, 4, 2, 2),   # the textbook case, no overlap
    (2, 3, 7, 5, 3, 1),   # overlap, stride 1, non-square
    (2, 2, 9, 6, 3, 2),   # overlap, stride 2
    (1, 2, 8, 7, 3, 2),   # overlap, last row/column covered by no window
    (3, 1, 6, 9, 3, 3),   # windows touch but do not overlap
    (2, 2, 5, 4, 1, 1),   # 1x1 windows: the identity
    (1, 3, 10, 11, 4, 3),  # overlap with k not a multiple of s
    (2, 3, 16, 12, 3, 1),  # several blocks of threads (1152 inputs)
]
IDS = ["N{}C{}H{}W{}k{}s{}".format(*shape) for shape in SHAPES]


def make_input(shape, ties, seed):
    """Random (N, C, H, W) float64 input; with ties, small integers so windows repeat their max."""
    rng = np.random.default_rng(seed)
    if ties:
        return rng.integers(0, 3, size=shape).astype(np.float64)
    return rng.normal(size=shape)


def make_dout(out_shape, seed):
    return np.random.default_rng(seed + 1000).normal(size=out_shape)


@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
@pytest.mark.parametrize("N, C, H, W, k, s", SHAPES, ids=IDS)
def test_maxpool_forward_matches_solution(N, C, H, W, k, s, ties):
    x = make_input((N, C, H, W), ties, seed=H * 100 + W)
    out, argmax = kern.maxpool2d_forward(x, k, s)
    ref_out, ref_argmax = ref.maxpool2d_forward(x, k, s)
    assert argmax.dtype == np.int64
    np.testing.assert_array_equal(argmax, ref_argmax)  # the tie rule, exactly
    np.testing.assert_allclose(out, ref_out)


@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
@pytest.mark.parametrize("N, C, H, W, k, s", SHAPES, ids=IDS)
def test_inference_kernel_values_equal_training_kernel(N, C, H, W, k, s, ties):
    x = make_input((N, C, H, W), ties, seed=H * 100 + W + 1)
    values_only = kern.maxpool2d_forward_inference(x, k, s)
    out, _ = kern.maxpool2d_forward(x, k, s)
    np.testing.assert_array_equal(values_only, out)


@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
@pytest.mark.parametrize("N, C, H, W, k, s", SHAPES, ids=IDS)
def test_maxpool_backward_gather_and_atomic_match_solution(N, C, H, W, k, s, ties):
    x = make_input((N, C, H, W), ties, seed=H * 100 + W + 2)
    _, argmax = ref.maxpool2d_forward(x, k, s)
    dout = make_dout(argmax.shape, seed=H)
    expected = ref.maxpool2d_backward(dout, argmax, x.shape, k, s)
    np.testing.assert_allclose(kern.maxpool2d_backward(dout, argmax, x.shape, k, s), expected)
    np.testing.assert_allclose(
        kern.maxpool2d_backward_atomic(dout, argmax, x.shape, k, s), expected)


@pytest.mark.parametrize("N, C, H, W, k, s", SHAPES, ids=IDS)
def test_avgpool_forward_and_backward_match_solution(N, C, H, W, k, s):
    x = make_input((N, C, H, W), ties=False, seed=H * 100 + W + 3)
    out = kern.avgpool2d_forward(x, k, s)
    np.testing.assert_allclose(out, ref.avgpool2d_forward(x, k, s))
    dout = make_dout(out.shape, seed=W)
    np.testing.assert_allclose(kern.avgpool2d_backward(dout, x.shape, k, s),
                               ref.avgpool2d_backward(dout, x.shape, k, s))


def test_overlap_winner_gets_the_sum_in_both_backward_kernels():
    # The 9 in the middle wins all four 2x2 windows (stride 1): its gradient is their sum.
    x = np.array([[1., 2., 1.], [2., 9., 2.], [1., 2., 1.]]).reshape(1, 1, 3, 3)
    _, argmax = kern.maxpool2d_forward(x, 2, 1)
    dout = np.array([1., 2., 3., 4.]).reshape(1, 1, 2, 2)
    for backward in (kern.maxpool2d_backward, kern.maxpool2d_backward_atomic):
        dx = backward(dout, argmax, x.shape, 2, 1)
        assert dx[0, 0, 1, 1] == 10.0
        assert dx.sum() == 10.0


def test_float32_stays_float32():
    # The kernels are generic over dtype: float32 in, float32 out, close to the float64 reference.
    x = make_input((2, 2, 7, 6), ties=False, seed=7)
    x32 = x.astype(np.float32)
    out, argmax = kern.maxpool2d_forward(x32, 3, 2)
    avg = kern.avgpool2d_forward(x32, 3, 2)
    dout32 = make_dout(out.shape, seed=7).astype(np.float32)
    dx = kern.maxpool2d_backward(dout32, argmax, x.shape, 3, 2)
    davg = kern.avgpool2d_backward(dout32, x.shape, 3, 2)
    for got in (out, avg, dx, davg):
        assert got.dtype == np.float32
    np.testing.assert_array_equal(argmax, ref.maxpool2d_forward(x32.astype(np.float64), 3, 2)[1])
    np.testing.assert_allclose(avg, ref.avgpool2d_forward(x32.astype(np.float64), 3, 2), rtol=1e-5)
    np.testing.assert_allclose(
        davg, ref.avgpool2d_backward(dout32.astype(np.float64), x.shape, 3, 2), rtol=1e-5)


def test_host_functions_leave_their_inputs_alone():
    x = make_input((1, 2, 6, 5), ties=True, seed=3)
    x_before = x.copy()
    out, argmax = kern.maxpool2d_forward(x, 3, 1)
    dout = make_dout(out.shape, seed=3)
    dout_before, argmax_before = dout.copy(), argmax.copy()
    kern.maxpool2d_forward_inference(x, 3, 1)
    kern.avgpool2d_forward(x, 3, 1)
    kern.maxpool2d_backward(dout, argmax, x.shape, 3, 1)
    kern.maxpool2d_backward_atomic(dout, argmax, x.shape, 3, 1)
    kern.avgpool2d_backward(dout, x.shape, 3, 1)
    np.testing.assert_array_equal(x, x_before)
    np.testing.assert_array_equal(dout, dout_before)
    np.testing.assert_array_equal(argmax, argmax_before)


# -- version 2: flat unsigned offsets, a 3-D grid, cells of s x s in the backward (kernels/routing_trap_v2.py)
@pytest.mark.parametrize("N, C, H, W, k, s", SHAPES, ids=IDS)
def test_version_2_matches_the_solution_ties_included(N, C, H, W, k, s):
    from backprop_traps.kernels import routing_trap_v2 as v2
    from backprop_traps.kernels.runtime.device import cuda
    x = make_input((N, C, H, W), True, seed=H * 100 + W + 7)  # ties: the first-max rule, exactly
    ref_out, ref_argmax = ref.maxpool2d_forward(x, k, s)
    dout = make_dout(ref_out.shape, seed=H + W)
    d_x, d_dout, d_argmax = cuda.to_device(x), cuda.to_device(dout), cuda.to_device(ref_argmax)
    out, out_inf, avg = (cuda.device_array(ref_out.shape) for _ in range(3))
    argmax = cuda.device_array(ref_out.shape, np.int64)
    dx, dx_scatter, dx_avg = cuda.device_array(x.shape), cuda.to_device(np.zeros(x.shape)), cuda.device_array(x.shape)
    v2.maxpool2d_forward_device(d_x, out, argmax, k, s)
    v2.maxpool2d_forward_inference_device(d_x, out_inf, k, s)
    v2.maxpool2d_backward_device(d_dout, d_argmax, dx, k, s)
    v2.maxpool2d_backward_atomic_device(d_dout, d_argmax, dx_scatter)
    v2.avgpool2d_forward_device(d_x, avg, k, s)
    v2.avgpool2d_backward_device(d_dout, dx_avg, k, s)
    np.testing.assert_array_equal(argmax.copy_to_host(), ref_argmax)
    np.testing.assert_array_equal(out.copy_to_host(), ref_out)
    np.testing.assert_array_equal(out_inf.copy_to_host(), ref_out)
    want = ref.maxpool2d_backward(dout, ref_argmax, x.shape, k, s)
    np.testing.assert_allclose(dx.copy_to_host(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dx_scatter.copy_to_host(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(avg.copy_to_host(), ref.avgpool2d_forward(x, k, s), rtol=1e-12)
    np.testing.assert_allclose(dx_avg.copy_to_host(), ref.avgpool2d_backward(dout, x.shape, k, s), rtol=1e-12, atol=1e-12)
