"""Question 23's kernels (Square forward, backward, double backward; RoundSTE forward and
straight-through backward) against the solution notebook's engine, under the simulator and
its race checker (tests/conftest.py).

Loaded by path, so the same file works in this kit and in an instructor's own folder. Sizes
stay small, with one that is not a multiple of a block and one larger than the grid's cap
(the grid-stride loop must cover the rest).
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
ref = load_solution("custom_function", ROOT)
_spec = importlib.util.spec_from_file_location("kernels_custom_function", ROOT / "kernels" / "custom_function.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)


def engine_square(x, dy):
    """(y, dx) from the solution's Square on its own engine."""
    return ref.grader_function("Square", x, dy)[:2]


def engine_double_backward(x, dy, gdx):
    xt, dyt = ref.Tensor(x, requires_grad=True), ref.Tensor(dy, requires_grad=True)
    y = ref.apply_function(ref.Square, xt)
    with ref.set_grad_enabled(True):
        (dx,) = ref.as_gradients(ref.Square.backward(y.grad_fn.ctx, dyt), 1)
    gx, gdy = ref.grad(dx, [xt, dyt], ref.Tensor(gdx))
    return gx.data, gdy.data


@pytest.mark.parametrize("shape", [(1,), (7,), (3, 5), (257,)])
def test_square_forward_backward_and_double_backward_match_the_engine(shape):
    rng = np.random.default_rng(sum(shape))
    x, dy, gdx = (rng.standard_normal(shape) * 2 for _ in range(3))
    y, dx = engine_square(x, dy)
    np.testing.assert_array_equal(kernels.square_forward(x), y)
    np.testing.assert_allclose(kernels.square_backward(x, dy), dx, rtol=1e-15, atol=0)
    for got, want in zip(kernels.square_double_backward(x, dy, gdx), engine_double_backward(x, dy, gdx)):
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)


def test_round_ste_rounds_halves_to_even_and_passes_the_gradient_through():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999999999999994, 3.2, -7.7, 0.0])
    dy = np.arange(1.0, 11.0)
    y, dx = ref.grader_function("RoundSTE", x, dy)[:2]
    np.testing.assert_array_equal(kernels.round_ste_forward(x), y)
    np.testing.assert_array_equal(kernels.round_ste_forward(x), np.round(x))
    np.testing.assert_array_equal(kernels.round_ste_backward(dy), dx)


def test_float32_stays_float32_without_leaving_its_dtype():
    x = np.array([2.5, -3.5, 1.25, 4194303.5], dtype=np.float32)  # the last: just under 2^22
    assert kernels.round_ste_forward(x).dtype == np.float32
    np.testing.assert_array_equal(kernels.round_ste_forward(x), np.round(x))
    np.testing.assert_allclose(kernels.square_backward(x, np.ones(4, np.float32)), 2 * x.astype(np.float64), rtol=1e-7)


def test_round_refuses_values_beyond_its_exact_range():
    with pytest.raises(ValueError, match="rounds"):
        kernels.round_ste_forward(np.array([2.0 ** 23], dtype=np.float32))


def test_a_grid_capped_below_the_size_still_covers_every_element(monkeypatch):
    monkeypatch.setattr(kernels, "MAX_BLOCKS", 1)
    x = np.linspace(-3, 3, 3 * kernels.THREADS_PER_BLOCK + 5)
    np.testing.assert_array_equal(kernels.square_forward(x), x * x)


def test_launches_stay_within_cuda_limits_at_the_benchmarks_sizes():
    """Every launcher at TINY, LARGE and the HUGE size that fills an 80 GB GPU (kernels/cases/
    custom_function.py), dry-run (kernels/runtime/dry_run.py): nothing allocated or run."""
    from backprop_traps.kernels.cases import custom_function as sizes
    from backprop_traps.kernels.runtime.dry_run import ShapeOnly, dry_run
    for E in (sizes.TINY, sizes.LARGE, *sizes.HUGE):
        a = lambda: ShapeOnly(E, np.float32)  # noqa: E731
        with dry_run() as run:
            kernels.square_forward_device(a(), a())
            kernels.square_backward_device(a(), a(), a())
            kernels.square_double_backward_device(a(), a(), a(), a(), a())
            kernels.round_ste_forward_device(a(), a())
            kernels.round_ste_backward_device(a(), a())
        assert len(run.launches) == 5 and not run.refused, run.refused
        assert all(launch.grid[0] <= kernels.MAX_BLOCKS for launch in run.launches)  # grid-stride beyond


def test_the_race_checker_watched_the_launches(race_log):
    x = np.linspace(-2, 2, 9)
    kernels.square_double_backward(x, x, x)
    kernels.round_ste_forward(x)
    if race_log is not None:  # on a real GPU there is no checker
        assert race_log.launches == 2 and race_log.accesses > 0 and not race_log.flags
