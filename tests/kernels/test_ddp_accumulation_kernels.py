"""The data-parallel kernels against the solution notebook's reference, under the simulator.

Loaded by path, so the same file works in this kit and in an instructor's own folder. The race
checker (tests/conftest.py) watches every launch: the ring's steps must read and write disjoint
chunks. Shapes stay small and blocks have 16 or 32 threads (each simulated thread a Python thread).
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
ref = load_solution("ddp_accumulation", ROOT)
_spec = importlib.util.spec_from_file_location("kernels_ddp_accumulation", ROOT / "kernels" / "ddp_accumulation.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)


def shards(seed, sizes, d_in, d_out):
    rng = np.random.default_rng(seed)
    params = (rng.standard_normal((d_in, d_out)) / np.sqrt(d_in), 0.3 * rng.standard_normal(d_out))
    return params, [rng.standard_normal((n, d_in)) for n in sizes], [rng.standard_normal((n, d_out)) for n in sizes]


@pytest.mark.parametrize("ranks, entries", [(1, 5), (2, 7), (3, 21), (4, 3), (5, 40)])
def test_the_ring_sums_every_rank_and_gives_it_to_every_rank(ranks, entries):
    """Chunks of ceil(P / R), the last one short or empty (P < R included)."""
    rng = np.random.default_rng(ranks * 100 + entries)
    tensors = [rng.standard_normal(entries) for _ in range(ranks)]
    out = kernels.all_reduce(tensors)
    want = ref.all_reduce(tensors)
    assert len(out) == ranks
    for got, w in zip(out, want):
        np.testing.assert_allclose(got, w, rtol=1e-13, atol=1e-14)


def test_the_ring_sends_two_r_minus_one_chunks_per_rank():
    assert kernels.ring_traffic(1, 100) == 0
    assert kernels.ring_traffic(4, 100) == 2 * 3 * 25        # 1.5 P: nearly 2 P at any R
    assert kernels.ring_traffic(8, 1000) == 2 * 7 * 125


@pytest.mark.parametrize("seed, sizes, micro_batch", [
    (0, [6, 6], 3),          # equal shards, micro-batches that divide them
    (1, [7, 7, 7], 3),       # a shorter last micro-batch on every rank
    (2, [8, 8, 3], 4),       # a short last shard, with fewer micro-steps
    (3, [5], 2),             # one rank: plain accumulation, nothing to reduce
    (4, [1, 1, 1, 1], 1),    # one-row shards
    (5, [4, 9], 20),         # micro_batch larger than every shard
])
def test_the_step_matches_the_solution_on_every_rank(seed, sizes, micro_batch):
    params, xs, ys = shards(seed, sizes, 4, 3)
    got = kernels.ddp_grads(params, xs, ys, micro_batch)
    want = ref.linear_grads(params, np.concatenate(xs), np.concatenate(ys))
    assert len(got) == len(sizes)
    for rank in got:
        for g, w in zip(rank, want):
            assert g.shape == w.shape and g.dtype == np.float64
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13)


def test_float32_shards_stay_float32():
    params, xs, ys = shards(6, [5, 3], 3, 2)
    got = kernels.ddp_grads(params, [x.astype(np.float32) for x in xs], [y.astype(np.float32) for y in ys], 2)
    want = ref.ddp_grads(params, xs, ys, 2)
    for rank, w in zip(got, want):
        for g, e in zip(rank, w):
            assert g.dtype == np.float32
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def test_the_race_checker_watched_the_ring(race_log):
    kernels.all_reduce([np.arange(6.0), np.ones(6), -np.arange(6.0)])
    if race_log is not None:  # on a real GPU there is no checker
        assert race_log.launches == 4 and race_log.accesses > 0 and not race_log.flags
