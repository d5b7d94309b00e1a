"""The gradient_clinic kernels against the solution notebook's reference, under the simulator.

Both versions, kernels/gradient_clinic.py (version 1, the teaching kernels) and kernels/gradient_clinic_v2.py
(the fast one), run every test through the fixture ``version``. Loaded by path, so the
same file works in this kit and in an instructor's own folder. Layers
stay small (a launch simulates at most a few hundred threads); G below the block count a
layer would get makes each thread stride over several entries.
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
ref = load_solution("gradient_clinic", ROOT)


def _load(name):
    """kernels/<name>.py by path, registered as importlib's recipe does (its host functions look
    their own module up in sys.modules)."""
    spec = importlib.util.spec_from_file_location(f"kernels_{name}", ROOT / "kernels" / f"{name}.py")
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


kernels = _load("gradient_clinic")  # version 1, the teaching kernels
VERSIONS = {"v1": kernels}
if (ROOT / "kernels" / "gradient_clinic_v2.py").is_file():  # version 2 beside it, in this kit
    VERSIONS["v2"] = _load("gradient_clinic_v2")


@pytest.fixture(params=list(VERSIONS.values()), ids=list(VERSIONS))
def version(request):
    """The module whose host functions a test calls: each version in turn."""
    return request.param


@pytest.mark.parametrize("shapes, blocks", [
    ([(1, 1)], None),                  # one entry: 63 threads hold nothing
    ([(5, 7), (7, 3)], None),          # fewer entries than a block
    ([(13, 11), (11, 2)], 2),          # 143 entries over 2 blocks: threads stride
])
def test_norms_and_ratios_match_the_reference(version, shapes, blocks):
    rng = np.random.default_rng(len(shapes))
    before = [rng.normal(size=s) for s in shapes]
    grads = [rng.normal(size=s) for s in shapes]
    after = [w - 0.01 * g for w, g in zip(before, grads)]
    for got, want in zip(version.update_ratios(before, after, grads, blocks), ref.update_ratios(before, after, grads)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_layer_that_did_not_move_and_a_zero_weight_that_did(version):
    before = [np.ones((3, 3)), np.zeros((2, 4))]
    grads = [np.ones((3, 3)), np.ones((2, 4))]
    after = [before[0].copy(), before[1] - 0.5 * grads[1]]
    _, update_norms, ratios = version.update_ratios(before, after, grads)
    assert update_norms[0] == 0 and ratios[0] == 0 and ratios[1] == np.inf


def test_dead_units_count_exact_zeros_and_stop_at_one_positive(version):
    z = np.array([[-1.0, 0.0, -1.0, 2.0], [-3.0, 0.0, 0.5, 1.0], [-0.5, 0.0, -2.0, 0.1]])
    assert version.dead_relu_fraction([z])[0] == 0.5 == ref.dead_relu_fraction([z])[0]
    wide = np.random.default_rng(4).normal(size=(3, 70)) - 1.0  # 70 units: two blocks of 64
    np.testing.assert_allclose(version.dead_relu_fraction([wide]), ref.dead_relu_fraction([wide]))


def test_norms_are_the_same_bits_every_run(version):
    rng = np.random.default_rng(5)
    args = ([rng.normal(size=(9, 9))], [rng.normal(size=(9, 9))], [rng.normal(size=(9, 9))])
    first, again = (version.update_ratios(*args, blocks=2) for _ in range(2))
    assert all(np.array_equal(a, b) for a, b in zip(first, again))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("seed", [10, 11])
def test_random_shapes_in_both_dtypes(version, seed, dtype):
    """Layers and pre-activations of shapes drawn at random, float64 or float32 inputs."""
    rng = np.random.default_rng(seed)
    shapes = [tuple(int(d) for d in rng.integers(1, 30, size=2)) for _ in range(rng.integers(1, 4))]
    before = [rng.normal(size=s).astype(dtype) for s in shapes]
    grads = [rng.normal(size=s).astype(dtype) for s in shapes]
    after = [(w - 0.01 * g).astype(dtype) for w, g in zip(before, grads)]
    as64 = lambda arrays: [a.astype(np.float64) for a in arrays]
    for got, want in zip(version.update_ratios(before, after, grads),
                         ref.update_ratios(as64(before), as64(after), as64(grads))):
        np.testing.assert_allclose(got, want, rtol=1e-12)  # the sums are float64 either way
    z = [(rng.normal(size=(int(rng.integers(1, 40)), int(rng.integers(1, 80)))) - 1.5).astype(dtype)]
    np.testing.assert_allclose(version.dead_relu_fraction(z), ref.dead_relu_fraction(as64(z)))
