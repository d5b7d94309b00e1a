"""The finite-difference helpers: the stacked path for independent rows gives the same
gradient and the same verdict as the element-by-element loop."""
import numpy as np
import pytest

from backprop_traps.grader.engine import gradcheck


def pool(z):
    """Max over 3 x 3 windows with stride 2: rows (axis 0) independent, like max pooling."""
    from numpy.lib.stride_tricks import sliding_window_view
    return sliding_window_view(z, (3, 3), axis=(2, 3))[..., ::2, ::2, :, :].max(axis=(-1, -2))


def layer(z):
    """A row-wise nonlinearity mixing the row's entries (independent rows, not elementwise)."""
    return np.tanh(z @ np.arange(1.0, 1.0 + z.shape[-1] ** 2).reshape(z.shape[-1], -1) / 10)


@pytest.mark.parametrize("f, shape", [(pool, (3, 2, 7, 7)), (layer, (4, 5))])
def test_rows_gradient_equals_the_loop(f, shape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    dout = rng.standard_normal(f(x).shape)
    loop = gradcheck.numerical_gradient(f, x, dout)
    rows = gradcheck.numerical_gradient(f, x, dout, rows=True)
    assert np.allclose(rows, loop, rtol=0, atol=1e-8)


def test_rows_gradient_works_in_chunks(monkeypatch):
    monkeypatch.setattr(gradcheck, "STACK_BYTES", 200)  # a few rows per call
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5))
    dout = rng.standard_normal(layer(x).shape)
    assert np.allclose(gradcheck.numerical_gradient(layer, x, dout, rows=True),
                       gradcheck.numerical_gradient(layer, x, dout), atol=1e-8)


def test_directional_check_stacked_gives_the_same_verdict():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((40, 30))  # over FULL_LIMIT: directional checks
    dout = rng.standard_normal(layer(x).shape)
    right = gradcheck.numerical_gradient(layer, x, dout, rows=True)
    for dx, ok in ((right, True), (2 * right, False)):
        errs = [gradcheck.gradient_error(layer, x, dout, dx, np.random.default_rng(3), rows=r)
                for r in (False, True)]
        assert all((e <= gradcheck.GRAD_RTOL) == ok for e in errs), errs


def test_rows_with_companion_arrays_takes_each_stacked_rows_own_companions():
    """Attention-like: f(q, k) mixes q's row b with k's row b; perturbing q's rows stacked
    must pair each with the k row it came from."""
    rng = np.random.default_rng(4)
    q, k = rng.standard_normal((3, 4, 2)), rng.standard_normal((3, 4, 2))
    f = lambda x, k: np.tanh(x @ np.swapaxes(k, 1, 2))  # noqa: E731  (B, 4, 4)
    dout = rng.standard_normal((3, 4, 4))
    loop = gradcheck.numerical_gradient(lambda x: f(x, k), q, dout)
    rows = gradcheck.numerical_gradient(gradcheck.Rows(f, k), q, dout, rows=True)
    assert np.allclose(rows, loop, atol=1e-8)
    big = rng.standard_normal((30, 8, 3))
    kk = rng.standard_normal((30, 8, 3))
    d = rng.standard_normal((30, 8, 8))
    right = gradcheck.numerical_gradient(gradcheck.Rows(f, kk), big, d, rows=True)
    errs = [gradcheck.gradient_error(g, big, d, right, np.random.default_rng(5), rows=r)
            for g, r in ((lambda x: f(x, kk), False), (gradcheck.Rows(f, kk), True))]
    assert max(errs) < 1e-6


def relu_sum(z):
    return np.maximum(z, 0.0) * np.array([1.0, 2.0, 3.0])


@pytest.mark.parametrize("offset", [3e-7, -3e-7, 4e-8, -4e-8])
def test_a_kink_inside_the_step_does_not_fail_a_right_answer(offset):
    """A pre-activation within EPS of a ReLU's kink: the central difference at EPS straddles it
    (it reads half the slope), the smaller steps do not, and the right gradient passes."""
    x = np.array([offset, 1.0, -2.0])
    dout = np.array([0.7, -1.1, 0.9])
    right = np.where(x > 0, dout * np.array([1.0, 2.0, 3.0]), 0.0)
    assert gradcheck.rel_error(right, gradcheck.numerical_gradient(relu_sum, x, dout)) > 1e-3  # straddled
    assert gradcheck.gradient_error(relu_sum, x, dout, right, np.random.default_rng(0)) <= gradcheck.GRAD_RTOL


@pytest.mark.parametrize("wrong", [lambda g: 2 * g, lambda g: g + 0.01, lambda g: -g, lambda g: 0 * g])
def test_smaller_steps_never_pass_a_wrong_answer(wrong):
    """Every step estimates the same derivative away from kinks: a wrong gradient still fails,
    on the full path and the directional one, kink or not."""
    rng = np.random.default_rng(7)
    for x in (np.array([3e-7, 1.0, -2.0]), rng.standard_normal(600)):
        w = np.resize(np.array([1.0, 2.0, 3.0]), x.shape)
        f = lambda z, w=w: np.maximum(z, 0.0) * w  # noqa: E731
        dout = np.resize(np.array([0.7, -1.1, 0.9]), x.shape)
        right = np.where(x > 0, dout * w, 0.0)
        assert gradcheck.gradient_error(f, x, dout, right, np.random.default_rng(1)) <= gradcheck.GRAD_RTOL
        assert gradcheck.gradient_error(f, x, dout, wrong(right), np.random.default_rng(1)) > gradcheck.GRAD_RTOL


def scale_columns(gamma, x):
    """LayerNorm's affine part: every output column j reads gamma[j] only."""
    return x * gamma


@pytest.mark.parametrize("wrong_at", [0, 137, 299])
def test_a_small_input_under_a_big_output_is_checked_by_directions(monkeypatch, wrong_at):
    """gamma of 300 under a 64 x 300 output: full differences would evaluate f 600 times, so the
    directional check runs (FULL_WORK); it still passes the right gradient and fails one wrong in
    a single entry by as little as 1e-3 of it."""
    rng = np.random.default_rng(6)
    x, gamma = rng.standard_normal((64, 300)), rng.standard_normal(300)
    dout = rng.standard_normal((64, 300))
    f = lambda g: scale_columns(g, x)  # noqa: E731
    calls = []
    monkeypatch.setattr(gradcheck, "numerical_gradient", lambda *a, **k: calls.append(a) or 1 / 0)
    right = np.sum(dout * x, axis=0)
    assert gradcheck.gradient_error(f, gamma, dout, right, np.random.default_rng(7)) <= gradcheck.GRAD_RTOL
    wrong = right.copy()
    wrong[wrong_at] += 1e-3 * max(1.0, abs(right[wrong_at]))
    assert gradcheck.gradient_error(f, gamma, dout, wrong, np.random.default_rng(7)) > gradcheck.GRAD_RTOL
    assert calls == []  # never the element-by-element loop
    monkeypatch.undo()
    full = []
    loop = gradcheck.numerical_gradient
    monkeypatch.setattr(gradcheck, "numerical_gradient", lambda *a, **k: full.append(a) or loop(*a, **k))
    few = x[:4, :8]  # the same question at 4 x 8: full differences, as before
    assert gradcheck.gradient_error(lambda g: scale_columns(g, few), gamma[:8], dout[:4, :8],
                                    np.sum(dout[:4, :8] * few, axis=0), np.random.default_rng(7)) <= gradcheck.GRAD_RTOL
    assert len(full) == 1
