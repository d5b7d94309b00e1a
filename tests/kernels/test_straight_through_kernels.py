"""The straight_through kernels against the solution notebook's reference, under the simulator.

Both versions, kernels/straight_through.py (version 1, the teaching kernels) and kernels/straight_through_v2.py
(the fast one), run every test through the fixture ``version``. Loaded by path, so the
same file works in this kit and in an instructor's own folder.
Shapes stay tiny (the simulator runs every CUDA thread as a Python thread); the inputs mix
values inside and outside the range with exact ends and exact rounding ties.
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
ref = load_solution("straight_through", ROOT)


def _load(name):
    """kernels/<name>.py by path, registered as importlib's recipe does (its host functions look
    their own module up in sys.modules)."""
    spec = importlib.util.spec_from_file_location(f"kernels_{name}", ROOT / "kernels" / f"{name}.py")
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


kernels = _load("straight_through")  # version 1, the teaching kernels
VERSIONS = {"v1": kernels}
if (ROOT / "kernels" / "straight_through_v2.py").is_file():  # version 2 beside it, in this kit
    VERSIONS["v2"] = _load("straight_through_v2")


@pytest.fixture(params=list(VERSIONS.values()), ids=list(VERSIONS))
def version(request):
    """The module whose host functions a test calls: each version in turn."""
    return request.param


def mixed_inputs(rng, shape, scale, qmin, qmax):
    """x = scale * u: u on the grid, on ties (k + 0.5), at the exact ends, and at random
    points up to 4 steps past each end."""
    size = int(np.prod(shape))
    k = rng.integers(qmin - 4, qmax + 5, size=size).astype(np.float64)
    u = k + rng.choice([0.0, 0.5, -0.5], size=size)
    u = np.where(rng.random(size) < 0.4, rng.uniform(qmin - 4, qmax + 4, size=size), u)
    u[: min(size, 2)] = [qmin, qmax][: min(size, 2)]
    return rng.permutation(u).reshape(shape) * scale


def reference_mask(x, scale, qmin, qmax):
    """The solution's in-range positions, packed: its backward with dout = 1 is the mask."""
    passed = ref.fake_quant_backward(np.ones(x.shape), x, scale, qmin, qmax)
    return np.packbits(passed.ravel() != 0)


# shapes: one element, one full byte, a partial last byte, 3-D, and 1480 elements (185 threads)
CASES = [((1,), 0.25, -8, 7), ((8,), 0.5, -4, 3), ((3, 5), 0.1, -128, 127),
         ((2, 3, 7), 0.125, 0, 15), ((37, 40), 0.03, 0, 255)]


@pytest.mark.parametrize("shape, scale, qmin, qmax", CASES)
def test_forward_values_and_packed_mask(version, shape, scale, qmin, qmax):
    rng = np.random.default_rng(len(CASES) * sum(shape) + qmax)
    x = mixed_inputs(rng, shape, scale, qmin, qmax)
    out, mask = version.fake_quant_forward(x, scale, qmin, qmax)
    assert out.shape == x.shape and out.dtype == np.float64
    np.testing.assert_array_equal(out, ref.fake_quant_forward(x, scale, qmin, qmax))
    assert mask.dtype == np.uint8 and mask.shape == (int(np.ceil(x.size / 8)),)
    np.testing.assert_array_equal(mask, reference_mask(x, scale, qmin, qmax))


@pytest.mark.parametrize("shape, scale, qmin, qmax", CASES)
def test_backward_from_the_mask_alone(version, shape, scale, qmin, qmax):
    rng = np.random.default_rng(len(CASES) * sum(shape) + qmax + 1)
    x = mixed_inputs(rng, shape, scale, qmin, qmax)
    dout = rng.choice([-1.0, 1.0], size=shape) * rng.uniform(0.5, 1.5, size=shape)
    _, mask = version.fake_quant_forward(x, scale, qmin, qmax)
    dx = version.fake_quant_backward(dout, mask)
    np.testing.assert_array_equal(dx, ref.fake_quant_backward(dout, x, scale, qmin, qmax))


def test_ties_round_to_even_and_the_ends_are_inclusive(version):
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -4.0, 3.0, 3.25, -4.25]) * 0.5  # qmin -4, qmax 3
    out, mask = version.fake_quant_forward(x, 0.5, -4, 3)
    np.testing.assert_array_equal(out / 0.5, [-2, -2, 0, 0, 2, 2, -4, 3, 3, -4])
    np.testing.assert_array_equal(np.unpackbits(mask)[: x.size], [1, 1, 1, 1, 1, 1, 1, 1, 0, 0])


def test_float32_stays_float32(version):
    rng = np.random.default_rng(3)
    # a power-of-two step: x / scale and q * scale are exact in float32 and float64 alike
    x = mixed_inputs(rng, (5, 9), 0.25, -8, 7).astype(np.float32)
    out, mask = version.fake_quant_forward(x, 0.25, -8, 7)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, ref.fake_quant_forward(x.astype(np.float64), 0.25, -8, 7))
    dout = rng.uniform(-1, 1, size=x.shape).astype(np.float32)
    dx = version.fake_quant_backward(dout, mask)
    assert dx.dtype == np.float32
    np.testing.assert_array_equal(dx, ref.fake_quant_backward(dout.astype(np.float64), x.astype(np.float64),
                                                              0.25, -8, 7))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nan_gives_nan_and_no_gradient_on_every_target(version, dtype):
    """The kernel's NaN branch is explicit: min/max and rounding treat NaN differently on a GPU."""
    x = np.array([np.nan, 1.0, -np.nan, np.inf, -np.inf, 0.5], dtype=dtype)
    out, mask = version.fake_quant_forward(x, 0.5, -4, 3)
    expected = ref.fake_quant_forward(x.astype(np.float64), 0.5, -4, 3)
    np.testing.assert_array_equal(out, expected)  # NaN where x is NaN; the ends for +-inf
    assert np.isnan(out[[0, 2]]).all() and out.dtype == dtype
    np.testing.assert_array_equal(np.unpackbits(mask)[: x.size], [0, 1, 0, 0, 0, 1])
    dx = version.fake_quant_backward(np.ones(x.shape, dtype=dtype), mask)
    np.testing.assert_array_equal(dx, [0, 1, 0, 0, 0, 1])


def test_grids_past_the_dtypes_exact_rounding_are_refused(version):
    with pytest.raises(ValueError, match="2\\^22"):
        version.fake_quant_forward(np.ones(3, dtype=np.float32), 1.0, -(2 ** 23), 2 ** 23)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("seed", [10, 11, 12])
def test_random_shapes_in_both_dtypes(version, seed, dtype):
    """Shapes and grids drawn at random; a power-of-two step keeps float32 exact."""
    rng = np.random.default_rng(seed)
    shape = tuple(int(d) for d in rng.integers(1, 23, size=rng.integers(1, 4)))
    scale, qmin = float(2.0 ** rng.integers(-4, 1)), int(rng.integers(-128, 1))
    qmax = qmin + int(rng.integers(1, 256))
    x = mixed_inputs(rng, shape, scale, qmin, qmax).astype(dtype)
    out, mask = version.fake_quant_forward(x, scale, qmin, qmax)
    assert out.dtype == dtype and out.shape == shape
    np.testing.assert_array_equal(out, ref.fake_quant_forward(x.astype(np.float64), scale, qmin, qmax))
    np.testing.assert_array_equal(mask, reference_mask(x.astype(np.float64), scale, qmin, qmax))
    dout = rng.standard_normal(shape).astype(dtype)
    np.testing.assert_array_equal(version.fake_quant_backward(dout, mask), ref.fake_quant_backward(
        dout.astype(np.float64), x.astype(np.float64), scale, qmin, qmax))
