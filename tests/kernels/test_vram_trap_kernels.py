"""The vram_trap kernels against the solution notebook (simulator unless a real GPU is asked for).

Shapes stay tiny: the simulator runs every CUDA thread as a Python thread.
"""
import math

import numpy as np
import pytest

from backprop_traps.grader.loading.reference import load_solution
from backprop_traps.kernels import vram_trap as kv


@pytest.fixture(scope="module")
def ref():
    return load_solution("vram_trap")


def random_net(rng, widths):
    """params for an MLP of the given widths D_0 .. D_L."""
    return [(rng.normal(size=(d_in, d_out)), rng.normal(size=d_out))
            for d_in, d_out in zip(widths[:-1], widths[1:])]


# N, D_in, D_out: N * D_out a multiple of 8, not one, and smaller than one byte.
LAYER_SHAPES = [(4, 3, 6), (3, 5, 7), (1, 2, 3), (5, 1, 1)]


@pytest.mark.parametrize("N, D_in, D_out", LAYER_SHAPES)
def test_linear_relu_forward_matches_packed_relu(ref, N, D_in, D_out):
    rng = np.random.default_rng(N * 100 + D_in * 10 + D_out)
    h, W, b = rng.normal(size=(N, D_in)), rng.normal(size=(D_in, D_out)), rng.normal(size=D_out)
    h[0] = 0.0
    b[0] = 0.0  # z[0, 0] is exactly 0: not positive, so its bit is 0 and its a is 0
    a, mask = kv.linear_relu_forward(h, W, b)
    a_ref, mask_ref = ref.relu_forward_packed(h @ W + b)
    assert mask.dtype == np.uint8 and mask.shape == (math.ceil(N * D_out / 8),)
    np.testing.assert_array_equal(mask, mask_ref)
    np.testing.assert_allclose(a, a_ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("N, D_in, D_out", LAYER_SHAPES)
def test_linear_relu_backward_reads_the_mask(ref, N, D_in, D_out):
    rng = np.random.default_rng(N * 100 + D_in * 10 + D_out + 1)
    h, W, b = rng.normal(size=(N, D_in)), rng.normal(size=(D_in, D_out)), rng.normal(size=D_out)
    da = rng.normal(size=(N, D_out))
    _, mask = ref.relu_forward_packed(h @ W + b)
    dh, dW, db = kv.linear_relu_backward(da, mask, h, W)
    dz = ref.relu_backward_packed(da, mask, da.shape)  # the solution's gate; the rest is h @ W
    np.testing.assert_allclose(dh, dz @ W.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dW, h.T @ dz, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(db, dz.sum(axis=0), rtol=1e-12, atol=1e-12)


def test_linear_layer_is_the_solutions_one_layer_net(ref):
    """A 1-layer net is one linear layer: its gradients pin linear_forward / linear_backward."""
    rng = np.random.default_rng(7)
    (W, b), = random_net(rng, [4, 5])
    x, y = rng.normal(size=(3, 4)), rng.normal(size=(3, 5))
    z = kv.linear_forward(x, W, b)
    np.testing.assert_allclose(z, x @ W + b, rtol=1e-12, atol=1e-12)
    _, [(dW_ref, db_ref)] = ref.mlp_loss_and_grads([(W, b)], x, y, 1)
    _, dW, db = kv.linear_backward((z - y) / 3, x, W)
    np.testing.assert_allclose(dW, dW_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(db, db_ref, rtol=1e-12, atol=1e-12)


def test_float32_stays_float32(ref):
    rng = np.random.default_rng(3)
    h, W, b = (rng.normal(size=s).astype(np.float32) for s in [(3, 4), (4, 5), (5,)])
    a, mask = kv.linear_relu_forward(h, W, b)
    assert a.dtype == np.float32
    a_ref, mask_ref = ref.relu_forward_packed(h.astype(np.float64) @ W + b)
    np.testing.assert_array_equal(mask, mask_ref)
    np.testing.assert_allclose(a, a_ref, rtol=1e-5, atol=1e-5)


# widths D_0 .. D_L (non-uniform), segment sizes: 1, 2, L, and one that does not divide L.
NETS = [
    ([3, 5, 2, 4, 3], [1, 2, 4, 3]),
    ([2, 4, 3, 5, 2, 3], [2, 5, 3]),
    ([4, 3], [1]),
]


@pytest.mark.parametrize("widths, segment_sizes", NETS)
def test_checkpointed_mlp_matches_solution(ref, widths, segment_sizes):
    rng = np.random.default_rng(len(widths))
    params = random_net(rng, widths)
    x, y = rng.normal(size=(4, widths[0])), rng.normal(size=(4, widths[-1]))
    params_before = [(W.copy(), b.copy()) for W, b in params]
    x_before, y_before = x.copy(), y.copy()
    for segment_size in segment_sizes:
        loss_ref, grads_ref = ref.mlp_loss_and_grads(params, x, y, segment_size)
        loss, grads = kv.mlp_loss_and_grads(params, x, y, segment_size)
        assert isinstance(loss, float)
        assert loss == pytest.approx(loss_ref, rel=1e-12)
        assert len(grads) == len(params)
        for (dW, db), (dW_ref, db_ref) in zip(grads, grads_ref):
            np.testing.assert_allclose(dW, dW_ref, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(db, db_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(x, x_before)
    np.testing.assert_array_equal(y, y_before)
    for (W, b), (W0, b0) in zip(params, params_before):
        np.testing.assert_array_equal(W, W0)
        np.testing.assert_array_equal(b, b0)


# -- version 2: tiled products (kernels/vram_trap_v2.py); D_out past one 64-column tile as well
V2_SHAPES = LAYER_SHAPES + [(3, 17, 72)]


@pytest.mark.parametrize("N, D_in, D_out", V2_SHAPES)
def test_version_2_layer_matches_the_packed_relu_and_its_backward(ref, N, D_in, D_out):
    from backprop_traps.kernels import vram_trap_v2 as v2
    rng = np.random.default_rng(N * 100 + D_in * 10 + D_out + 2)
    h, W, b = rng.normal(size=(N, D_in)), rng.normal(size=(D_in, D_out)), rng.normal(size=D_out)
    a, mask = v2.linear_relu_forward(h, W, b)
    a_ref, mask_ref = ref.relu_forward_packed(h @ W + b)
    np.testing.assert_array_equal(mask, mask_ref)
    np.testing.assert_allclose(a, a_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(v2.linear_forward(h, W, b), h @ W + b, rtol=1e-12, atol=1e-12)
    da = rng.normal(size=(N, D_out))
    dz = ref.relu_backward_packed(da, mask_ref, da.shape)
    for got, want in zip(v2.linear_relu_backward(da, mask_ref, h, W), (dz @ W.T, h.T @ dz, dz.sum(axis=0))):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_version_2_refuses_a_mask_its_blocks_cannot_pack():
    from backprop_traps.kernels import vram_trap_v2 as v2
    with pytest.raises(ValueError, match="multiple of 8"):
        v2.linear_relu_forward(np.ones((2, 3)), np.ones((3, 65)), np.ones(65))
