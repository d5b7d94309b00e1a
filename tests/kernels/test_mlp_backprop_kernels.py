"""The mlp_backprop kernels against the solution notebook's reference, under the simulator.

Loaded by path, so the same file works in this kit and in an instructor's own folder.
Shapes stay tiny: the simulator runs every CUDA thread as a Python thread.
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
ref = load_solution("mlp_backprop", ROOT)
_spec = importlib.util.spec_from_file_location("kernels_mlp_backprop", ROOT / "kernels" / "mlp_backprop.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)

CLOSE = {"rtol": 1e-12, "atol": 1e-12}
# N, D_in, H, D_out: all different; N * H a multiple of 8 and not; one row; one unit; square.
SHAPES = [(4, 3, 6, 2), (3, 5, 7, 4), (1, 2, 3, 1), (5, 2, 1, 3), (4, 4, 4, 4)]


def network(seed, N, D_in, H, D_out, dtype=np.float64):
    """x, W1, b1, W2, b2, y; z[0, 0] is exactly 0 (not positive: its mask bit and dz are 0)."""
    rng = np.random.default_rng(seed)
    x, W1, b1, W2, b2, y = (rng.normal(size=s) for s in
                            [(N, D_in), (D_in, H), (H,), (H, D_out), (D_out,), (N, D_out)])
    x[0] = 0.0
    b1[0] = 0.0
    return tuple(a.astype(dtype) for a in (x, W1, b1, W2, b2, y))


@pytest.mark.parametrize("shape", SHAPES)
def test_forward_saves_a_packed_mask_instead_of_z(shape):
    x, W1, b1, W2, b2, _ = network(sum(shape), *shape)
    out, h, mask = kernels.mlp_forward(x, W1, b1, W2, b2)
    out_ref, h_ref, z_ref = ref.mlp_forward(x, W1, b1, W2, b2)
    np.testing.assert_allclose(out, out_ref, **CLOSE)
    np.testing.assert_allclose(h, h_ref, **CLOSE)
    assert mask.dtype == np.uint8
    np.testing.assert_array_equal(mask, np.packbits((z_ref > 0).ravel()))


@pytest.mark.parametrize("shape", SHAPES)
def test_backward_through_the_mask_matches_the_solution(shape):
    x, W1, b1, W2, b2, _ = network(sum(shape) + 1, *shape)
    out, h, z = ref.mlp_forward(x, W1, b1, W2, b2)
    dout = np.random.default_rng(sum(shape)).normal(size=out.shape)
    mask = np.packbits((z > 0).ravel())
    got = kernels.mlp_backward(dout, x, mask, h, W1, W2)
    for name, g, want in zip(("dx", "dW1", "db1", "dW2", "db2"), got,
                             ref.mlp_backward(dout, x, z, h, W1, W2)):
        assert g.shape == want.shape, name
        np.testing.assert_allclose(g, want, **CLOSE, err_msg=name)


def test_mse_loss_matches_the_solution():
    rng = np.random.default_rng(5)
    out, y = rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
    loss, dout = kernels.mse_loss(out, y)
    loss_ref, dout_ref = ref.mse_loss(out, y)
    assert isinstance(loss, float) and loss == pytest.approx(loss_ref, rel=1e-12)
    np.testing.assert_allclose(dout, dout_ref, **CLOSE)


@pytest.mark.parametrize("shape", [(4, 3, 6, 2), (1, 2, 1, 1)])
def test_one_step_on_the_device_matches_the_solution(shape):
    x, W1, b1, W2, b2, y = network(len(shape), *shape)
    before = [a.copy() for a in (x, y, W1, b1, W2, b2)]
    loss, grads = kernels.mlp_loss_and_grads(x, y, W1, b1, W2, b2)
    out, h, z = ref.mlp_forward(x, W1, b1, W2, b2)
    loss_ref, dout = ref.mse_loss(out, y)
    assert loss == pytest.approx(loss_ref, rel=1e-12)
    for g, want in zip(grads, ref.mlp_backward(dout, x, z, h, W1, W2)):
        np.testing.assert_allclose(g, want, **CLOSE)
    for a, b in zip((x, y, W1, b1, W2, b2), before):
        np.testing.assert_array_equal(a, b)


def test_float32_stays_float32():
    x, W1, b1, W2, b2, y = network(9, 3, 4, 5, 2, dtype=np.float32)
    loss, grads = kernels.mlp_loss_and_grads(x, y, W1, b1, W2, b2)
    assert all(g.dtype == np.float32 for g in grads)
    wide = [a.astype(np.float64) for a in (x, W1, b1, W2, b2)]
    out, h, z = ref.mlp_forward(*wide)
    loss_ref, dout = ref.mse_loss(out, y.astype(np.float64))
    assert loss == pytest.approx(loss_ref, rel=1e-5)
    for g, want in zip(grads, ref.mlp_backward(dout, wide[0], z, h, wide[1], wide[3])):
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-5)
