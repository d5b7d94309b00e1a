"""The loss_scaling kernels against the solution notebook's reference, under the simulator.

Both versions, kernels/loss_scaling.py (version 1, the teaching kernels) and kernels/loss_scaling_v2.py
(the fast one), run every test through the fixture ``version``. Loaded by path, so the
same file works in this kit and in an instructor's own folder. Shapes
stay small and blocks are 32 or 64 threads, so a launch simulates at most a few hundred threads.
"""
import importlib.util
import os
import sys
from pathlib import Path

if os.environ.get("BACKPROP_TRAPS_REAL_GPU") != "1":  # before numba.cuda is imported
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from backprop_traps.grader.loading.reference import load_solution  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ref = load_solution("loss_scaling", ROOT)


def _load(name):
    """kernels/<name>.py by path, registered as importlib's recipe does (its host functions look
    their own module up in sys.modules)."""
    spec = importlib.util.spec_from_file_location(f"kernels_{name}", ROOT / "kernels" / f"{name}.py")
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


kernels = _load("loss_scaling")  # version 1, the teaching kernels
VERSIONS = {"v1": kernels}
if (ROOT / "kernels" / "loss_scaling_v2.py").is_file():  # version 2 beside it, in this kit
    VERSIONS["v2"] = _load("loss_scaling_v2")


@pytest.fixture(params=list(VERSIONS.values()), ids=list(VERSIONS))
def version(request):
    """The module whose host functions a test calls: each version in turn."""
    return request.param

HP = {"lr": 0.1, "max_norm": 1.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3}


def shapes_of(seed):
    rng = np.random.default_rng(seed)
    return [tuple(int(d) for d in rng.integers(1, 6, size=rng.integers(1, 3))) for _ in range(rng.integers(1, 4))]


def assert_lists_equal(got, expected, rtol=1e-12):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=rtol, atol=0)


def test_every_float16_bit_pattern_decodes_exactly(version):
    """All 65536 patterns: finite ones to their value, inf and NaN flagged and kept."""
    every = np.arange(65536, dtype=np.uint16).view(np.float16)
    grads, found_inf, _ = version.unscale_check_sqnorm([every], 1.0, threads_per_block=64, blocks=2)
    assert found_inf
    expected = every.astype(np.float64)
    np.testing.assert_array_equal(grads[0], expected)  # inf stays inf, NaN stays NaN (equal_nan)


@pytest.mark.parametrize("seed, scale, threads_per_block", [
    (0, 2.0 ** 16, 32), (1, 1000.0, 32), (2, 0.5, 64), (3, 2.0 ** 10, 32)])
def test_unscale_and_norm_match_the_reference(version, seed, scale, threads_per_block):
    rng = np.random.default_rng(seed)
    scaled = [(rng.standard_normal(s) * 10.0 ** rng.uniform(-4, 4, size=s)).astype(np.float16)
              for s in shapes_of(seed)]
    grads, found_inf, total_norm = version.unscale_check_sqnorm(scaled, scale, threads_per_block=threads_per_block)
    expected, expected_inf = ref.unscale_grads(scaled, scale)
    assert found_inf == expected_inf is False
    assert_lists_equal(grads, expected)
    np.testing.assert_allclose(total_norm, ref.clip_grad_norm(expected, 1.0)[1], rtol=1e-12)


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_one_non_finite_entry_anywhere_is_found(version, value):
    scaled = [np.ones((3, 4), dtype=np.float16), np.full(70, 0.5, dtype=np.float16)]
    scaled[1][57] = value  # in the second block of 32 threads
    grads, found_inf, _ = version.unscale_check_sqnorm(scaled, 4.0, threads_per_block=32)
    expected, expected_inf = ref.unscale_grads(scaled, 4.0)
    assert found_inf and expected_inf
    np.testing.assert_array_equal(grads[1], expected[1])


def test_a_run_of_steps_matches_the_reference(version):
    """Twelve steps fed back into themselves, clipping on and off, overflows planted."""
    rng = np.random.default_rng(4)
    shapes = [(4, 5), (5,), (2, 3)]
    params, state = [rng.standard_normal(s) for s in shapes], (2.0 ** 15, 0)
    ref_params, ref_state = params, state
    skips = 0
    for t in range(12):
        grads = [rng.standard_normal(s) * 10.0 ** rng.uniform(-4, -0.3) for s in shapes]
        if t in (3, 4, 9):
            grads[t % 3].flat[0] = 5.0  # 5 * 2^15 overflows float16
        if t == 7:
            grads[2].flat[-1] = np.nan
        loss = float(rng.uniform(0.1, 5.0))
        params, state, clipped, skipped = version.amp_step(params, grads, loss, state, HP, threads_per_block=32)
        ref_params, ref_state, ref_clipped, ref_skipped = ref.amp_step(ref_params, grads, loss, ref_state, HP)
        assert skipped == ref_skipped and state == ref_state, t
        assert_lists_equal(params, ref_params)
        if skipped:
            assert clipped is None and ref_clipped is None
        else:
            assert_lists_equal(clipped, ref_clipped)
        skips += skipped
    assert skips >= 3  # the planted overflows (two of them back to back) and the NaN


def test_float32_buffers_stay_close(version):
    rng = np.random.default_rng(5)
    scaled = [(rng.standard_normal(50) * 100).astype(np.float16)]
    grads, _, total_norm = version.unscale_check_sqnorm(scaled, 1000.0, dtype=np.float32, threads_per_block=32)
    expected = ref.unscale_grads(scaled, 1000.0)[0]
    assert grads[0].dtype == np.float32
    np.testing.assert_allclose(grads[0], expected[0], rtol=1e-6)
    np.testing.assert_allclose(total_norm, ref.clip_grad_norm(expected, 1.0)[1], rtol=1e-5)


def test_block_size_must_be_a_power_of_two(version):
    with pytest.raises(ValueError, match="power of two"):
        version.unscale_check_sqnorm([np.ones(3, dtype=np.float16)], 1.0, threads_per_block=48)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("seed", [10, 11, 12])
def test_random_shapes_in_both_dtypes(version, seed, dtype):
    """Tensors of shapes drawn at random, unscaled into float64 or float32 buffers."""
    rng = np.random.default_rng(seed)
    scaled = [(rng.standard_normal(s) * 10.0 ** rng.uniform(-3, 3, size=s)).astype(np.float16)
              for s in [tuple(int(d) for d in rng.integers(1, 40, size=rng.integers(1, 3)))
                        for _ in range(rng.integers(1, 4))]]
    scale = float(2.0 ** rng.integers(-2, 12))
    grads, found_inf, total_norm = version.unscale_check_sqnorm(scaled, scale, dtype=dtype, threads_per_block=32)
    expected, _ = ref.unscale_grads(scaled, scale)
    assert not found_inf
    rtol = 1e-12 if dtype == np.float64 else 1e-6
    for g, e in zip(grads, expected):
        assert g.dtype == dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=rtol, atol=0)
    np.testing.assert_allclose(total_norm, ref.clip_grad_norm(expected, 1.0)[1], rtol=10 * rtol)
