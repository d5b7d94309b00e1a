"""The gradient_clinic kernels against the solution notebook's reference, under the simulator.

Loaded by path, so the same file works in this kit and in an instructor's own folder. Layers
stay small (a launch simulates at most a few hundred threads); G below the block count a
layer would get makes each thread stride over several entries.
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
ref = load_solution("gradient_clinic", ROOT)
_spec = importlib.util.spec_from_file_location("kernels_gradient_clinic", ROOT / "kernels" / "gradient_clinic.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)


@pytest.mark.parametrize("shapes, blocks", [
    ([(1, 1)], None),                  # one entry: 63 threads hold nothing
    ([(5, 7), (7, 3)], None),          # fewer entries than a block
    ([(13, 11), (11, 2)], 2),          # 143 entries over 2 blocks: threads stride
])
def test_norms_and_ratios_match_the_reference(shapes, blocks):
    rng = np.random.default_rng(len(shapes))
    before = [rng.normal(size=s) for s in shapes]
    grads = [rng.normal(size=s) for s in shapes]
    after = [w - 0.01 * g for w, g in zip(before, grads)]
    for got, want in zip(kernels.update_ratios(before, after, grads, blocks), ref.update_ratios(before, after, grads)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_layer_that_did_not_move_and_a_zero_weight_that_did():
    before = [np.ones((3, 3)), np.zeros((2, 4))]
    grads = [np.ones((3, 3)), np.ones((2, 4))]
    after = [before[0].copy(), before[1] - 0.5 * grads[1]]
    _, update_norms, ratios = kernels.update_ratios(before, after, grads)
    assert update_norms[0] == 0 and ratios[0] == 0 and ratios[1] == np.inf


def test_dead_units_count_exact_zeros_and_stop_at_one_positive():
    z = np.array([[-1.0, 0.0, -1.0, 2.0], [-3.0, 0.0, 0.5, 1.0], [-0.5, 0.0, -2.0, 0.1]])
    assert kernels.dead_relu_fraction([z])[0] == 0.5 == ref.dead_relu_fraction([z])[0]
    wide = np.random.default_rng(4).normal(size=(3, 70)) - 1.0  # 70 units: two blocks of 64
    np.testing.assert_allclose(kernels.dead_relu_fraction([wide]), ref.dead_relu_fraction([wide]))


def test_norms_are_the_same_bits_every_run():
    rng = np.random.default_rng(5)
    args = ([rng.normal(size=(9, 9))], [rng.normal(size=(9, 9))], [rng.normal(size=(9, 9))])
    first, again = (kernels.update_ratios(*args, blocks=2) for _ in range(2))
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
