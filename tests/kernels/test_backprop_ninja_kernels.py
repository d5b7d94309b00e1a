"""The backprop_ninja kernels against the solution notebook's reference, under the simulator.

Loaded by path, so the same file works in this kit and in an instructor's own folder.
Shapes stay small (a launch simulates at most a few hundred threads).
"""
import importlib.util
import os
from pathlib import Path

if os.environ.get("BACKPROP_TRAPS_REAL_GPU") != "1":  # before numba.cuda is imported
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from backprop_traps.grader.loading.reference import load_solution  # noqa: E402
from backprop_traps.kernels.cases.backprop_ninja import random_problem  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ref = load_solution("backprop_ninja", ROOT)
_spec = importlib.util.spec_from_file_location("kernels_backprop_ninja", ROOT / "kernels" / "backprop_ninja.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)


@pytest.mark.parametrize("seed, shape, p_drop", [
    (0, (1, 1, 3, 2, 4), 0.0),    # one token, nothing dropped; B * H = 4, half a byte of bits
    (1, (3, 2, 5, 3, 5), 0.25),   # ids from half the vocabulary: repeats
    (2, (4, 3, 9, 4, 8), 0.5),    # B * H = 32: whole bytes
])
def test_forward_and_backward_match_the_reference(seed, shape, p_drop):
    params, idx, targets, keep_bits, p = random_problem(np.random.default_rng(seed), *shape, p_drop=p_drop)
    loss, cache = kernels.ninja_forward(params, idx, targets, keep_bits, p, 1e-5)
    want_loss, want_cache = ref.ninja_forward(params, idx, targets, keep_bits, p, 1e-5)
    assert np.isclose(loss, want_loss, rtol=1e-12)
    for key, want in want_cache.items():
        np.testing.assert_allclose(cache[key], want, rtol=1e-11, atol=1e-12, err_msg=key)
    grads = kernels.ninja_backward(params, want_cache, idx, targets, keep_bits, p)
    for key, want in ref.ninja_backward(params, want_cache, idx, targets, keep_bits, p).items():
        np.testing.assert_allclose(grads[key], want, rtol=1e-11, atol=1e-12, err_msg=key)


def test_one_id_everywhere_collects_every_position_in_de():
    """The atomics' job: every position names token 2, so its row of dE gets all of them."""
    params, idx, targets, keep_bits, p = random_problem(np.random.default_rng(3), 3, 4, 5, 2, 6)
    idx = np.full_like(idx, 2)
    _, cache = ref.ninja_forward(params, idx, targets, keep_bits, p, 1e-5)
    want = ref.ninja_backward(params, cache, idx, targets, keep_bits, p)
    got = kernels.ninja_backward(params, cache, idx, targets, keep_bits, p)
    np.testing.assert_allclose(got["dE"], want["dE"], rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(got["dE"][2] - (want["dlogits"].T @ cache["z"])[2],
                               got["demb"].reshape(-1, 2).sum(axis=0), rtol=1e-11, atol=1e-12)


def test_dropout_kernels_read_np_packbits_order():
    """Bit i of the mask is byte i // 8, most significant bit first, as np.packbits writes it."""
    keep = np.array([[1, 0, 0, 1, 1], [0, 1, 1, 0, 1]], dtype=bool)  # 10 bits: one padded byte
    hln = np.linspace(-2, 2, 10).reshape(2, 5)
    h, hdrop = np.zeros_like(hln), np.zeros_like(hln)
    kernels.tanh_dropout_forward_kernel[kernels.launch(10)](hln.reshape(-1), np.packbits(keep.ravel()), 2.0,
                                                            h.reshape(-1), hdrop.reshape(-1))  # flat views
    np.testing.assert_allclose(hdrop, np.tanh(hln) * keep * 2.0)


def test_the_deterministic_gather_gives_the_same_de_every_run():
    params, idx, targets, keep_bits, p = random_problem(np.random.default_rng(6), 4, 3, 6, 3, 5)
    _, cache = ref.ninja_forward(params, idx, targets, keep_bits, p, 1e-5)
    want = ref.ninja_backward(params, cache, idx, targets, keep_bits, p)["dE"]
    first, again = (kernels.ninja_backward(params, cache, idx, targets, keep_bits, p, deterministic=True)["dE"]
                    for _ in range(2))
    assert np.array_equal(first, again)
    np.testing.assert_allclose(first, want, rtol=1e-11, atol=1e-12)
