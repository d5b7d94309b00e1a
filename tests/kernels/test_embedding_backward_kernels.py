"""Question 25's kernels (the lookup, the backward by atomics and by sorted segments, the sparse
backward) against the solution notebook's reference, under the simulator and its race checker
(tests/conftest.py).

Loaded by path, so the same file works in this kit and in an instructor's own folder. The ids
repeat (the scatter's collisions are the point), some positions hold padding_idx, and one size
is larger than the grid's cap (the grid-stride loop must cover the rest).
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
ref = load_solution("embedding_backward", ROOT)
_spec = importlib.util.spec_from_file_location("kernels_embedding_backward", ROOT / "kernels" / "embedding_backward.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)


def draw(seed, B, T, V, D, distinct):
    rng = np.random.default_rng(seed)
    pool = rng.choice(V, size=distinct, replace=False)
    ids = rng.choice(pool, size=(B, T)).astype(np.int64)
    return rng.standard_normal((V, D)), ids, rng.standard_normal((B, T, D))


@pytest.mark.parametrize("seed, B, T, V, D, distinct", [(0, 1, 1, 3, 1, 1), (1, 2, 7, 9, 3, 4), (2, 3, 5, 40, 5, 6)])
@pytest.mark.parametrize("padding", [False, True])
def test_forward_and_both_backwards_match_the_reference(seed, B, T, V, D, distinct, padding):
    W, ids, dout = draw(seed, B, T, V, D, distinct)
    pad = int(ids[0, -1]) if padding else None
    np.testing.assert_array_equal(kernels.embedding_forward(W, ids, pad), ref.embedding_forward(W, ids, pad))
    want = ref.embedding_backward(dout, ids, V, pad)
    for method in ("atomic", "sorted"):
        np.testing.assert_allclose(kernels.embedding_backward(dout, ids, V, pad, method), want, rtol=1e-12, atol=1e-12)
    got_ids, got_rows = kernels.embedding_backward_sparse(dout, ids, V, pad)
    want_ids, want_rows = ref.embedding_backward_sparse(dout, ids, V, pad)
    np.testing.assert_array_equal(got_ids, want_ids)
    np.testing.assert_allclose(got_rows, want_rows, rtol=1e-12, atol=1e-12)


def test_every_position_padding_gives_no_rows():
    ids = np.full((2, 3), 4, dtype=np.int64)
    dout = np.ones((2, 3, 2))
    assert kernels.embedding_backward(dout, ids, 6, 4).sum() == 0.0
    got_ids, got_rows = kernels.embedding_backward_sparse(dout, ids, 6, 4)
    assert got_ids.shape == (0,) and got_rows.shape == (0, 2)


def test_the_sorted_backward_sums_in_a_fixed_order():
    """Kernel 3 adds a segment's gradients in the order of the positions: the same bits as a
    sequential sum (the atomic kernel promises only the value)."""
    ids = np.zeros((1, 5), dtype=np.int64)
    dout = np.array([[[1e16], [1.0], [-1e16], [1.0], [3.0]]])
    expected = ((((1e16 + 1.0) + -1e16) + 1.0) + 3.0)
    assert kernels.embedding_backward(dout, ids, 1, None, "sorted")[0, 0] == expected


def test_a_grid_capped_below_the_size_still_covers_every_element(monkeypatch):
    """One block for 40 positions, one warp for 40 features: both stride loops go round."""
    monkeypatch.setattr(kernels, "MAX_BLOCKS", 1)
    monkeypatch.setattr(kernels, "THREADS_PER_BLOCK", 32)
    W, ids, dout = draw(3, 4, 10, 12, 40, 7)
    np.testing.assert_array_equal(kernels.embedding_forward(W, ids, None), ref.embedding_forward(W, ids, None))
    pad = int(ids[0, 0])
    for method in ("atomic", "sorted"):
        np.testing.assert_allclose(kernels.embedding_backward(dout, ids, 12, pad, method),
                                   ref.embedding_backward(dout, ids, 12, pad), rtol=1e-12, atol=1e-12)


def test_float32_stays_float32():
    W, ids, dout = draw(4, 2, 4, 7, 3, 3)
    W32, dout32 = W.astype(np.float32), dout.astype(np.float32)
    assert kernels.embedding_forward(W32, ids, None).dtype == np.float32
    assert kernels.embedding_backward_sparse(dout32, ids, 7, None)[1].dtype == np.float32


def test_launches_stay_within_cuda_limits_at_the_benchmarks_sizes():
    """Every launcher at TINY, LARGE and the HUGE sizes that fill an 80 GB GPU (kernels/cases/
    embedding_backward.py), dry-run (kernels/runtime/dry_run.py): nothing allocated or run."""
    from backprop_traps.kernels.cases import embedding_backward as sizes
    from backprop_traps.kernels.runtime.dry_run import ShapeOnly, dry_run
    for P, V, D, S in (sizes.TINY, sizes.LARGE, *sizes.HUGE):
        with dry_run() as run:
            kernels.embedding_forward_device(ShapeOnly((V, D), np.float32), ShapeOnly(P, np.int64), 0,
                                             ShapeOnly((P, D), np.float32))
            kernels.embedding_backward_atomic_device(ShapeOnly((P, D), np.float32), ShapeOnly(P, np.int64), 0,
                                                     ShapeOnly((V, D), np.float32))
            kernels.segment_sum_device(ShapeOnly((P, D), np.float32), ShapeOnly(P, np.int64),
                                       ShapeOnly(S + 1, np.int64), ShapeOnly(S, np.int64), ShapeOnly((S, D), np.float32))
        assert len(run.launches) == 3 and not run.refused, run.refused
        assert all(launch.grid[0] <= kernels.MAX_BLOCKS for launch in run.launches)  # grid-stride beyond


def test_the_race_checker_watched_the_launches(race_log):
    """Six positions holding two ids: the atomic backward's colliding adds are atomics, and the
    sorted one has one writer per row, so neither is flagged (a plain += scatter is: the checker's
    own tests, tests/kernels/test_race_checker.py)."""
    W, ids, dout = draw(5, 2, 3, 5, 2, 2)
    kernels.embedding_forward(W, ids, None)
    kernels.embedding_backward(dout, ids, 5, None, "atomic")
    kernels.embedding_backward(dout, ids, 5, None, "sorted")
    kernels.embedding_backward_sparse(dout, ids, 5, None)
    if race_log is not None:  # on a real GPU there is no checker
        assert race_log.launches == 4 and race_log.accesses > 0 and not race_log.flags
