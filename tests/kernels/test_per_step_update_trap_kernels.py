"""The per_step_update_trap kernels against the solution notebook, under the simulator: both
versions (kernels/per_step_update_trap.py, one thread an output; kernels/per_step_update_trap_v2.py,
tiled) through the fixture ``k``, the module whose host functions a test calls.

Shapes are small (each launch a few hundred simulated threads): the simulator runs every
CUDA thread as a Python thread and syncs them at every barrier of the tree reductions.
"""
import ast
import inspect

import numpy as np
import pytest

import backprop_traps.kernels.per_step_update_trap as kernels
import backprop_traps.kernels.per_step_update_trap_v2 as kernels_v2
from backprop_traps.grader.loading.reference import load_solution

ref = load_solution("per_step_update_trap")

# Every (stride, padding) pair with its own small shape (N, C_in, C_out, L, K); K > stride
# so windows overlap, and some lengths leave a tail of inputs that no window reads.
CASES = [
    (1, 0, (2, 1, 2, 7, 3)), (1, 1, (2, 2, 1, 8, 2)), (1, 2, (3, 1, 2, 5, 4)),
    (2, 0, (2, 2, 2, 9, 3)), (2, 1, (2, 1, 3, 8, 4)), (2, 2, (3, 2, 1, 6, 3)),
    (3, 0, (2, 2, 1, 11, 4)), (3, 1, (2, 1, 2, 9, 5)), (3, 2, (3, 2, 2, 7, 4)),
]
CASE_IDS = [f"stride{s}-pad{p}" for s, p, _ in CASES]


@pytest.fixture(params=[kernels, kernels_v2], ids=["v1", "v2"])
def k(request):
    return request.param


def make_problem(seed, shape, stride, padding, dtype=np.float64):
    N, C_in, C_out, L, K = shape
    assert K > stride
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, C_in, L)).astype(dtype)
    w = rng.standard_normal((C_out, C_in, K)).astype(dtype)
    b = rng.standard_normal(C_out).astype(dtype)
    L_out = (L + 2 * padding - K) // stride + 1
    dout = rng.standard_normal((N, C_out, L_out)).astype(dtype)
    return x, w, b, dout


@pytest.mark.parametrize("stride, padding, shape", CASES, ids=CASE_IDS)
def test_forward_matches_solution(stride, padding, shape, k):
    x, w, b, _ = make_problem(1, shape, stride, padding)
    out = k.conv1d_forward(x, w, b, stride, padding)
    np.testing.assert_allclose(out, ref.conv1d_forward(x, w, b, stride, padding), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("stride, padding, shape", CASES, ids=CASE_IDS)
def test_backward_data_matches_solution(stride, padding, shape, k):
    x, w, _, dout = make_problem(2, shape, stride, padding)
    dx = k.conv1d_backward_data(dout, w, x.shape[2], stride, padding)
    expected, _, _ = ref.conv1d_backward(dout, x, w, stride, padding)
    np.testing.assert_allclose(dx, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("stride, padding, shape", CASES, ids=CASE_IDS)
def test_backward_weight_and_bias_match_solution(stride, padding, shape, k):
    x, w, _, dout = make_problem(3, shape, stride, padding)
    dw = k.conv1d_backward_weight(dout, x, w.shape[2], stride, padding)
    db = k.conv1d_backward_bias(dout)
    _, expected_dw, expected_db = ref.conv1d_backward(dout, x, w, stride, padding)
    np.testing.assert_allclose(dw, expected_dw, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(db, expected_db, rtol=1e-12, atol=1e-12)


def test_long_reduction_uses_several_blocks_per_weight(k):
    # N * L_out = 2 * 75 = 150 terms per weight: three stage-1 blocks, then stage 2 folds them.
    shape, stride, padding = (2, 2, 1, 77, 3), 1, 0
    x, w, _, dout = make_problem(4, shape, stride, padding)
    assert k.partials_per_value(dout.shape[0] * dout.shape[2]) > 1
    dw = k.conv1d_backward_weight(dout, x, w.shape[2], stride, padding)
    db = k.conv1d_backward_bias(dout)
    _, expected_dw, expected_db = ref.conv1d_backward(dout, x, w, stride, padding)
    np.testing.assert_allclose(dw, expected_dw, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(db, expected_db, rtol=1e-12, atol=1e-12)


def test_backward_convenience_returns_all_three_and_leaves_inputs_alone(k):
    shape, stride, padding = (2, 2, 2, 9, 3), 2, 1
    x, w, _, dout = make_problem(5, shape, stride, padding)
    before = [a.copy() for a in (dout, x, w)]
    dx, dw, db = k.conv1d_backward(dout, x, w, stride, padding)
    for got, expected in zip((dx, dw, db), ref.conv1d_backward(dout, x, w, stride, padding)):
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    for a, original in zip((dout, x, w), before):
        np.testing.assert_array_equal(a, original)


def test_float32_stays_float32(k):
    shape, stride, padding = (2, 1, 2, 6, 3), 2, 1
    x, w, b, dout = make_problem(6, shape, stride, padding, dtype=np.float32)
    out = k.conv1d_forward(x, w, b, stride, padding)
    grads = k.conv1d_backward(dout, x, w, stride, padding)
    assert out.dtype == np.float32 and all(g.dtype == np.float32 for g in grads)
    as64 = [a.astype(np.float64) for a in (x, w, b, dout)]
    np.testing.assert_allclose(out, ref.conv1d_forward(*as64[:3], stride, padding), rtol=1e-5, atol=1e-5)
    for got, expected in zip(grads, ref.conv1d_backward(as64[3], as64[0], as64[1], stride, padding)):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


REDUCTION_FUNCTIONS = [
    "block_tree_sum",
    "conv1d_backward_weight_partials_kernel",
    "conv1d_backward_bias_partials_kernel",
    "sum_partials_kernel",
]


def test_weight_gradient_reduction_uses_no_atomics():
    """The reduction over positions and batch is a shared-memory tree, never atomics."""
    tree = ast.parse(inspect.getsource(kernels))
    functions = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    for name in REDUCTION_FUNCTIONS:
        assert name in functions, f"{name} is missing from the kernel module"
        body = functions[name].body
        if ast.get_docstring(functions[name]) is not None:
            body = body[1:]  # the docstring may explain atomics; only code counts
        code = "\n".join(ast.unparse(statement) for statement in body)
        assert "atomic" not in code, f"{name} uses an atomic"
        assert "syncthreads" in code or "block_tree_sum" in code, f"{name} does not reduce as a tree"
    # and nothing else in either version reaches for cuda.atomic
    for module in (kernels, kernels_v2):
        attributes = {node.attr for node in ast.walk(ast.parse(inspect.getsource(module)))
                      if isinstance(node, ast.Attribute)}
        assert "atomic" not in attributes, module.__name__


def test_reduction_blocks_of_any_power_of_two_up_to_the_shared_size_sum_right_and_others_are_refused():
    from numba import cuda
    rng = np.random.default_rng(11)
    partials = rng.normal(size=(3, 70))
    for threads in (1, 16, 32, 64):
        d_totals = cuda.device_array(3)
        kernels.reduction_launch(kernels.sum_partials_kernel, 3, threads)(cuda.to_device(partials), d_totals)
        np.testing.assert_allclose(d_totals.copy_to_host(), partials.sum(axis=1), rtol=1e-12)
    for threads in (48, 128):
        with pytest.raises(ValueError, match="power of two up to 64"):
            kernels.reduction_launch(kernels.sum_partials_kernel, 3, threads)


@pytest.mark.parametrize("shape", [(1, 17, 17, 2, 2), (1, 33, 1, 2, 2), (1, 1, 1, 131, 2)],
                         ids=["channels-past-a-chunk", "inputs-past-a-tile", "positions"])
def test_tiles_with_edges(shape):
    """More channels than one shared chunk (16) or one block's 32, or more positions than one
    128-position tile: version 2's tile boundaries, in float32 (version 1 has no tiles)."""
    stride, padding = 1, 1
    x, w, b, dout = make_problem(7, shape, stride, padding, dtype=np.float32)
    as64 = [a.astype(np.float64) for a in (x, w, b, dout)]
    np.testing.assert_allclose(kernels_v2.conv1d_forward(x, w, b, stride, padding),
                               ref.conv1d_forward(*as64[:3], stride, padding), rtol=1e-4, atol=1e-4)
    for got, expected in zip(kernels_v2.conv1d_backward(dout, x, w, stride, padding),
                             ref.conv1d_backward(as64[3], as64[0], as64[1], stride, padding)):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
