"""Question 24's kernels (the reversible block's coupling, its backward and its weight
gradients) against the solution notebook, under the simulator and its race checker
(tests/conftest.py).

Loaded by path, so the same file works in this kit and in an instructor's own folder. Shapes
stay small, with N * D not a multiple of a block, and one D larger than N.
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
ref = load_solution("memory_budget", ROOT)
_spec = importlib.util.spec_from_file_location("kernels_memory_budget", ROOT / "kernels" / "memory_budget.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)


def problem(seed, N, D):
    rng = np.random.default_rng(seed)
    block = (rng.standard_normal((D, D)) * 0.9 / np.sqrt(D), 0.2 * rng.standard_normal(D),
             rng.standard_normal((D, D)) * 0.9 / np.sqrt(D), 0.2 * rng.standard_normal(D))
    return [rng.standard_normal((N, D)) for _ in range(4)], block


@pytest.mark.parametrize("seed, N, D", [(0, 1, 1), (1, 5, 3), (2, 2, 6), (3, 9, 4)])
def test_forward_inverse_and_backward_match_the_reference(seed, N, D):
    (x1, x2, dy1, dy2), block = problem(seed, N, D)
    y1, y2 = ref.rev_forward(x1, x2, *block)
    for got, want in zip(kernels.rev_forward(x1, x2, *block), (y1, y2)):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    for got, want in zip(kernels.rev_inverse(y1, y2, *block), (x1, x2)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    got = kernels.rev_backward(dy1, dy2, y1, y2, *block)
    for g, w in zip(got, ref.rev_backward(dy1, dy2, y1, y2, *block)):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_a_stack_keeps_one_block_on_the_device_and_matches_the_reference():
    rng = np.random.default_rng(4)
    blocks = [tuple(rng.standard_normal(s) * 0.5 for s in ((3, 3), 3, (3, 3), 3)) for _ in range(3)]
    x1, x2, t1, t2 = (rng.standard_normal((4, 3)) for _ in range(4))
    loss, grads = kernels.revnet_loss_and_grads(blocks, x1, x2, t1, t2)
    want_loss, want = ref.revnet_loss_and_grads(blocks, x1, x2, t1, t2)
    assert np.isclose(loss, want_loss)
    for g, w in zip(grads, want):
        for a, b in zip(g, w):
            np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-12)


def test_backward_is_deterministic():
    (x1, x2, dy1, dy2), block = problem(5, 6, 4)
    y1, y2 = ref.rev_forward(x1, x2, *block)
    first = kernels.rev_backward(dy1, dy2, y1, y2, *block)
    again = kernels.rev_backward(dy1, dy2, y1, y2, *block)
    assert all(np.array_equal(a, b) for a, b in zip(first, again)), "no atomics: the same bits every run"


def test_float32_stays_float32_and_close():
    (x1, x2, _, _), block = problem(6, 4, 3)
    y1, _ = kernels.rev_forward(x1.astype(np.float32), x2.astype(np.float32), *block)
    assert y1.dtype == np.float32
    np.testing.assert_allclose(y1, ref.rev_forward(x1, x2, *block)[0], rtol=1e-5, atol=1e-6)


def test_launches_stay_within_cuda_limits_at_the_benchmarks_sizes():
    """The forward, the inverse and the backward at TINY, LARGE and the HUGE shapes that fill
    an 80 GB GPU (kernels/cases/memory_budget.py), dry-run (kernels/runtime/dry_run.py): nothing
    allocated or run."""
    from backprop_traps.kernels.cases import memory_budget as sizes
    from backprop_traps.kernels.runtime.dry_run import ShapeOnly, dry_run
    for N, D in (sizes.TINY, sizes.LARGE, *sizes.HUGE):
        a = lambda *shape: ShapeOnly(shape or (N, D), np.float32)  # noqa: E731  (no shape: a half)
        params = kernels.Params(a(D, D), a(D), a(D, D), a(D))
        with dry_run() as run:
            kernels.rev_forward_device(a(), a(), params, a(), a(), a())
            kernels.rev_inverse_device(a(), a(), params, a(), a(), a(), a())
            kernels.rev_backward_device(a(), a(), a(), a(), params, *(a() for _ in range(8)),
                                        kernels.Params(a(D, D), a(D), a(D, D), a(D)))
        assert len(run.launches) == 10 and not run.refused, run.refused


def test_the_race_checker_watched_every_launch_of_the_backward(race_log):
    (x1, x2, dy1, dy2), block = problem(7, 3, 2)
    y1, y2 = ref.rev_forward(x1, x2, *block)
    kernels.rev_backward(dy1, dy2, y1, y2, *block)
    if race_log is not None:  # on a real GPU there is no checker
        assert race_log.launches == 6 and race_log.accesses > 0 and not race_log.flags
