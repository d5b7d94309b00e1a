"""The tensor_parallel_linear kernels against the solution notebook's reference, under the simulator.

Loaded by path, so the same file works in this kit and in an instructor's own folder.
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
ref = load_solution("tensor_parallel_linear", ROOT)
_spec = importlib.util.spec_from_file_location("kernels_tensor_parallel_linear", ROOT / "kernels" / "tensor_parallel_linear.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)


def close(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, (list, tuple)):
            close(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed, P, N, D, H", [(0, 1, 1, 1, 1), (1, 2, 3, 4, 6), (2, 4, 2, 3, 8)])
def test_the_block_matches_the_reference(seed, P, N, D, H):
    rng = np.random.default_rng(seed)
    x, dout = rng.standard_normal((N, D)), rng.standard_normal((N, D))
    W1, b1, W2, b2 = (rng.standard_normal(s) for s in ((D, H), H, (H, D), D))
    args = ([x] * P, np.split(W1, P, axis=1), np.split(b1, P), np.split(W2, P, axis=0))
    close(kernels.mlp_forward(*args, [b2] * P), ref.mlp_forward(*args, [b2] * P))
    close(kernels.mlp_backward([dout] * P, *args), ref.mlp_backward([dout] * P, *args))


@pytest.mark.parametrize("P", [2, 3])
def test_each_layer_matches_the_reference(P):
    rng = np.random.default_rng(P)
    N, D_in, D_out = 3, 2 * P, 3 * P
    x, W, b = rng.standard_normal((N, D_in)), rng.standard_normal((D_in, D_out)), rng.standard_normal(D_out)
    col = ([x] * P, np.split(W, P, axis=1), np.split(b, P))
    close(kernels.column_parallel_forward(*col), ref.column_parallel_forward(*col))
    dy = [rng.standard_normal((N, D_out // P)) for _ in range(P)]
    close(kernels.column_parallel_backward(dy, *col[:2]), ref.column_parallel_backward(dy, *col[:2]))
    row = (np.split(x, P, axis=1), np.split(W, P, axis=0), [b] * P)
    close(kernels.row_parallel_forward(*row), ref.row_parallel_forward(*row))
    dout = [rng.standard_normal((N, D_out))] * P
    close(kernels.row_parallel_backward(dout, *row[:2]), ref.row_parallel_backward(dout, *row[:2]))


def test_the_all_reduce_sums_in_rank_order():
    parts = [np.array([1e16, 1.0]), np.array([1.0, 1e16]), np.array([-1e16, -1e16])]
    for copy in kernels.all_reduce(parts):
        np.testing.assert_array_equal(copy, (parts[0] + parts[1]) + parts[2])


def test_a_bias_gradient_over_several_chunks_of_rows_and_the_bias_on_every_row():
    rng = np.random.default_rng(7)
    dy, b = rng.standard_normal((150, 5)), rng.standard_normal(5)  # 3 chunks of 64 rows, the last short
    want = ref.row_parallel_backward([dy], [np.ones((150, 1))], [np.ones((1, 5))])[2][0]
    np.testing.assert_allclose(kernels._bias_grad(dy), want, rtol=1e-12, atol=1e-12)
    x, W = rng.standard_normal((150, 3)), rng.standard_normal((3, 5))
    np.testing.assert_allclose(kernels._product(x, W, bias=b), x @ W + b, rtol=1e-12, atol=1e-12)
