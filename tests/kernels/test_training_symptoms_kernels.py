"""The training_symptoms kernels (the gated block) against the solution notebook's reference,
under the simulator (and the race checker, tests/conftest.py), with a GPU's launch limits.

Loaded by path, so the same file works in this kit and in an instructor's own folder. The
kernels import question 21's, so the kit's kernels package must be importable. Every check
runs version 1 and version 2 (tiled products, the gain's gradient in one 128-bit pass), except
where version 2's D must be a multiple of 4.
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
ref = load_solution("training_symptoms", ROOT)
_spec = importlib.util.spec_from_file_location("kernels_training_symptoms", ROOT / "kernels" / "training_symptoms.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)


def problem(seed, N, D, H, gain=None):
    rng = np.random.default_rng(seed)
    h, dout = rng.standard_normal((N, D)), rng.standard_normal((N, D))
    W1, W2 = rng.standard_normal((D, H)) * np.sqrt(2 / D), rng.standard_normal((H, D)) / np.sqrt(H)
    return h, dout, W1, W2, rng.uniform(-1.5, 1.5, size=D) if gain is None else gain


VERSIONS = pytest.mark.parametrize("version", [1, 2])


@VERSIONS
@pytest.mark.parametrize("seed, N, D, H, zero_gain", [
    (0, 1, 4, 1, False),   # one row, one group of 4 channels, one unit
    (1, 3, 4, 5, False),   # D < H
    (2, 2, 8, 2, False),   # D > H
    (3, 3, 4, 3, True),    # gain 0: the identity, and only the gain learns
    (6, 70, 12, 3, False), # v2: more than one part of 64 rows for the gain's gradient
])
def test_forward_and_backward_match_the_reference(seed, N, D, H, zero_gain, version):
    h, dout, W1, W2, gain = problem(seed, N, D, H, np.zeros(D) if zero_gain else None)
    np.testing.assert_allclose(kernels.gated_block_forward(h, W1, W2, gain, version),
                               ref.gated_block_forward(h, W1, W2, gain), rtol=1e-12, atol=1e-12)
    for got, want in zip(kernels.gated_block_backward(dout, h, W1, W2, gain, version),
                         ref.gated_block_backward(dout, h, W1, W2, gain)):
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12)
    if zero_gain:
        assert np.array_equal(kernels.gated_block_forward(h, W1, W2, gain, version), h), "gain 0: out is h exactly"


@pytest.mark.parametrize("seed, N, D, H", [(0, 1, 1, 1), (2, 2, 5, 2)])
def test_version_1_takes_any_number_of_channels(seed, N, D, H):
    h, dout, W1, W2, gain = problem(seed, N, D, H)
    for got, want in zip(kernels.gated_block_backward(dout, h, W1, W2, gain),
                         ref.gated_block_backward(dout, h, W1, W2, gain)):
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12)


def test_version_2_refuses_channels_it_cannot_read_4_at_a_time():
    h, dout, W1, W2, gain = problem(0, 2, 5, 2)
    with pytest.raises(ValueError, match="multiple of 4"):
        kernels.gated_block_backward(dout, h, W1, W2, gain, version=2)


@VERSIONS
def test_the_backward_is_deterministic(version):
    h, dout, W1, W2, gain = problem(4, 4, 4, 5)
    first, again = (kernels.gated_block_backward(dout, h, W1, W2, gain, version) for _ in range(2))
    assert all(np.array_equal(a, b) for a, b in zip(first, again)), "no atomics: the same bits every run"


@VERSIONS
def test_float32_stays_float32_and_close(version):
    h, dout, W1, W2, gain = problem(5, 2, 4, 4)
    got = kernels.gated_block_backward(dout, h.astype(np.float32), W1, W2, gain, version)
    assert all(g.dtype == np.float32 for g in got)
    for g, w in zip(got, ref.gated_block_backward(dout, h, W1, W2, gain)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_the_launches_fit_a_gpu_at_the_benchmarks_large_and_huge_sizes():
    """Both launchers at LARGE and at the HUGE shapes that fill an 80 GB GPU (kernels/cases/
    training_symptoms.py), dry-run (kernels/runtime/dry_run.py): nothing allocated or run."""
    from backprop_traps.kernels.cases import training_symptoms as sizes
    from backprop_traps.kernels.runtime.dry_run import ShapeOnly, dry_run
    for N, D, H in (sizes.LARGE, *sizes.HUGE):
        a = lambda *shape: ShapeOnly(shape, np.float32)  # noqa: E731
        with dry_run() as run:
            kernels.gated_forward_device(a(N, D), a(D, H), a(H, D), a(D), a(N, H), a(N, D), a(N, D))
            kernels.gated_backward_device(a(N, D), a(N, D), a(N, H), a(N, D), a(D, H), a(H, D), a(D),
                                          a(D), a(N, D), a(N, H), a(N, D), a(D, H), a(H, D))
        assert len(run.launches) == 8 and not run.refused, run.refused
        from backprop_traps.kernels import training_symptoms_v2 as v2
        from backprop_traps.kernels.common import tiled_matmul
        with dry_run() as run:
            v2.gated_forward_device(a(N, D), a(D, H), a(H, D), a(D), a(N, H), a(N, D), a(N, D))
            v2.gated_backward_device(a(N, D), a(N, D), a(N, H), a(N, D), a(D, H), a(H, D), a(D),
                                     a(D), a(N, D), a(N, H), a(N, D), a(D, H), a(H, D),
                                     a(v2.gain_parts(N), D), tiled_matmul.scratch(D, H, N, np.float32),
                                     tiled_matmul.scratch(H, D, N, np.float32))
        assert run.launches and not run.refused, run.refused
