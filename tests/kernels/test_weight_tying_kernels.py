"""Question 26's kernels (the tied model's forward, and its backward whose dE sums the
projection's and the lookup's shares in one thread per entry) against the solution notebook,
under the simulator and its race checker (tests/conftest.py).

Loaded by path, so the same file works in this kit and in an instructor's own folder. Shapes
keep V != D (a transposed read would not fit), include V = D (it would fit, and its values
would be wrong), ids that repeat, a token never looked up, and one position.
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
ref = load_solution("weight_tying", ROOT)
_spec = importlib.util.spec_from_file_location("kernels_weight_tying", ROOT / "kernels" / "weight_tying.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)


def draw(seed, V, D, N, dtype=np.float64):
    rng = np.random.default_rng(seed)
    E = rng.standard_normal((V, D)).astype(dtype)
    W = (rng.standard_normal((D, D)) * 0.8 / np.sqrt(D)).astype(dtype)
    ids = rng.integers(0, max(1, V - 1), size=N)  # token V - 1 is never looked up
    ids[-1] = ids[0]                              # and one id repeats
    return E, W, ids, rng.integers(0, V, size=N)


@pytest.mark.parametrize("seed, V, D, N", [(0, 7, 3, 5), (1, 4, 4, 6), (2, 2, 5, 1), (3, 9, 2, 8)])
def test_forward_and_backward_match_the_reference(seed, V, D, N):
    E, W, ids, targets = draw(seed, V, D, N)
    loss, cache = kernels.tied_lm_forward(E, W, ids, targets)
    want_loss, want_cache = ref.tied_lm_forward(E, W, ids, targets)
    assert abs(loss - want_loss) <= 1e-12 * max(1.0, abs(want_loss))
    for key in ("x", "h", "p"):
        np.testing.assert_allclose(cache[key], want_cache[key], rtol=1e-12, atol=1e-14)
    dE, dW = kernels.tied_lm_backward(E, W, want_cache, ids, targets)
    want_dE, want_dW = ref.tied_lm_backward(E, W, want_cache, ids, targets)
    np.testing.assert_allclose(dE, want_dE, rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(dW, want_dW, rtol=1e-11, atol=1e-14)


def test_the_row_never_looked_up_gets_only_the_projections_share():
    E, W, ids, targets = draw(4, 6, 3, 5)
    _, cache = ref.tied_lm_forward(E, W, ids, targets)
    dE, _ = kernels.tied_lm_backward(E, W, cache, ids, targets)
    dlogits = cache["p"].copy()
    dlogits[np.arange(5), targets] -= 1.0
    np.testing.assert_allclose(dE[5], (dlogits / 5).T[5] @ cache["h"], rtol=1e-12, atol=1e-15)


def test_float32_stays_float32():
    E, W, ids, targets = draw(5, 8, 3, 4, np.float32)
    loss, cache = kernels.tied_lm_forward(E, W, ids, targets)
    dE, dW = kernels.tied_lm_backward(E, W, cache, ids, targets)
    assert cache["p"].dtype == dE.dtype == dW.dtype == np.float32
    E64, W64 = E.astype(np.float64), W.astype(np.float64)
    want_loss, want_cache = ref.tied_lm_forward(E64, W64, ids, targets)
    assert abs(loss - want_loss) < 1e-5
    np.testing.assert_allclose(dE, ref.tied_lm_backward(E64, W64, want_cache, ids, targets)[0], rtol=1e-4, atol=1e-6)


def test_launches_stay_within_cuda_limits_at_the_benchmarks_sizes():
    """Both launchers at TINY, LARGE and the HUGE shapes that fill an 80 GB GPU (kernels/cases/
    weight_tying.py), dry-run (kernels/runtime/dry_run.py): nothing allocated or run."""
    from backprop_traps.kernels.cases import weight_tying as sizes
    from backprop_traps.kernels.runtime.dry_run import ShapeOnly, dry_run
    for V, D, N in (sizes.TINY, sizes.LARGE, *sizes.HUGE):
        a = lambda *shape, dt=np.float32: ShapeOnly(shape, dt)  # noqa: E731
        with dry_run() as run:
            kernels.forward_device(a(V, D), a(D, D), a(N, dt=np.int64), a(N, dt=np.int64), a(N, D), a(N, D),
                                   a(N, V), a(N, V), a(N))
            kernels.backward_device(a(V, D), a(D, D), a(N, dt=np.int64), a(N, dt=np.int64), a(N, D), a(N, D),
                                    a(N, V), a(N, D), a(N, D), a(V, D), a(D, D))
        assert len(run.launches) == 7 and not run.refused, run.refused


def test_the_race_checker_watched_the_launches(race_log):
    E, W, ids, targets = draw(6, 5, 3, 4)
    _, cache = kernels.tied_lm_forward(E, W, ids, targets)
    kernels.tied_lm_backward(E, W, cache, ids, targets)
    if race_log is not None:  # on a real GPU there is no checker
        assert race_log.launches == 7 and race_log.accesses > 0 and not race_log.flags
