"""Inputs for the loss_scaling checks: gradient sets of mixed ranks with chosen norms (on
both sides of max_norm), float16 scaled gradients, and amp steps built so that every trap
lands far from the right answer: clean steps, overflowing ones, and a long run with planted
overflows (spikes while the growth counter runs, twice in a row once, one NaN)."""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.checks.loss_scaling.traps import FP16_MAX


def tensor_shapes(rng, k=None) -> list[tuple]:
    """K parameter tensors of mixed ranks: a weight matrix, a bias vector, a small 3-D one."""
    pool = [(int(rng.integers(2, 6)), int(rng.integers(2, 6))), (int(rng.integers(1, 7)),),
            (2, int(rng.integers(1, 4)), int(rng.integers(2, 4))), (1,)]
    k = k or int(rng.integers(2, 5))
    return [pool[i] for i in rng.permutation(len(pool))[:k]]


def with_norms(rng, shapes, norms) -> list[np.ndarray]:
    """Random tensors of the given shapes with exactly these L2 norms."""
    out = []
    for shape, norm in zip(shapes, norms):
        g = rng.standard_normal(shape)
        out.append(g * (norm / np.linalg.norm(g)))
    return out


def fp16(values) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.asarray(values, dtype=np.float64).astype(np.float16)


def hparams(lr=0.1, max_norm=1.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=4):
    return {"lr": lr, "max_norm": max_norm, "growth_factor": growth_factor,
            "backoff_factor": backoff_factor, "growth_interval": growth_interval}


def scaled_set(rng, shapes, low=-3.0, high=3.0) -> list[np.ndarray]:
    """float16 gradients of a scaled loss, magnitudes log-uniform in [10^low, 10^high]."""
    return [fp16(rng.choice([-1.0, 1.0], size=s) * 10.0 ** rng.uniform(low, high, size=s)) for s in shapes]


def clean_steps(rng) -> list:
    """(params, grads, loss, state, hparams, what): steps that do not overflow, each built so the
    traps land far from the right answer (see the module docstring)."""
    steps = []
    shapes = tensor_shapes(rng, k=2)
    steps.append((with_norms(rng, shapes, [2.5, 0.4]), 0.3, (2.0 ** 12, 1), hparams(growth_interval=5),
                  "clipping on: one tensor far above max_norm, a small loss"))
    steps.append((with_norms(rng, tensor_shapes(rng), [0.3, 0.2, 0.25, 0.1]), 30.0, (2.0 ** 15, 3),
                  hparams(max_norm=2.0), "no clipping, a large loss, the scale grows"))
    steps.append(([g * 1e-6 for g in with_norms(rng, shapes, [3.0, 2.0])], 2.0, (2.0 ** 16, 0),
                  hparams(), "gradients of about 1e-6, far below float16's normal range"))
    steps.append((with_norms(rng, tensor_shapes(rng, k=3), [4.0, 1.5, 2.0]), 0.8, (1000.0, 0),
                  hparams(lr=0.05, max_norm=3.0, growth_interval=1), "a scale of 1000, growth every clean step"))
    # float16's edge from below: scale * g = 65510 rounds to 65504, the largest finite float16: no
    # overflow (a float64 test `> 65504` calls it one)
    edge = with_norms(rng, shapes, [0.5, 0.3])
    edge[0].flat[0] = 65510.0 / 2.0 ** 15
    steps.append((edge, 0.4, (2.0 ** 15, 0), hparams(max_norm=5.0),
                  "scale * g = 65510, which float16 rounds to 65504: finite"))
    return [([rng.standard_normal(g.shape) for g in grads], grads, loss, state, hp, what)
            for grads, loss, state, hp, what in steps]


def overflow_steps(rng) -> list:
    shapes = tensor_shapes(rng, k=3)
    params = [rng.standard_normal(s) for s in shapes]
    steps = []
    for k, value, state, hp, what in [
            (2, 1.5, (2.0 ** 16, 2), hparams(), "one entry of the last tensor overflows (1.5 * 65536)"),
            (None, np.nan, (2.0 ** 15, 1), hparams(), "a NaN gradient and no inf"),
            (0, -4.0, (2.0 ** 15, 3), hparams(), "-inf, one step before the scale would have grown"),
            (1, 0.6, (2.0 ** 17, 2), hparams(max_norm=100.0), "moderate gradients, a scale too large"),
            # float16's edge exactly: scale * g = 65520 is the smallest product that rounds to inf
            (0, 65520.0 / 2.0 ** 15, (2.0 ** 15, 1), hparams(), "scale * g = 65520 exactly, which rounds to inf")]:
        grads = [rng.standard_normal(s) * 0.01 for s in shapes]
        j = int(rng.integers(0, 3)) if k is None else k
        grads[j].flat[int(rng.integers(0, grads[j].size))] = value
        steps.append((params, grads, float(rng.uniform(0.1, 0.9)), state, hp, what))  # loss < max_norm
    return steps


def planted_run(ctx, n_steps=48):
    """A training run whose gradients overflow now and then: spikes planted while the counter
    is running (twice in a row once), one NaN, and the scale's own growth."""
    rng = ctx.rng
    shapes = tensor_shapes(rng, k=3)
    params, state, hp = [rng.standard_normal(s) for s in shapes], (2.0 ** 15, 0), hparams(lr=0.05)
    spikes = {int(t) for t in rng.choice(np.arange(3, n_steps - 2), size=4, replace=False)}
    double, nan_step = int(rng.integers(4, n_steps // 2)), int(rng.integers(n_steps // 2, n_steps - 1))
    spikes |= {double, double + 1}
    steps = []
    for t in range(n_steps):
        grads = [rng.standard_normal(s) * 10.0 ** rng.uniform(-5.0, -0.6) for s in shapes]
        if t in spikes and state[1] == 0 and t != double + 1:
            spikes.add(t + 1)  # plant it where the counter is running
        elif t in spikes:
            k = int(rng.integers(0, len(grads)))
            grads[k].flat[0] = rng.choice([-1, 1]) * rng.uniform(1.5, 20.0) * FP16_MAX / state[0]
        if t == nan_step:
            grads[-1].flat[-1] = np.nan
        loss = float(rng.uniform(0.05, 6.0))
        expected = ctx.ref.amp_step(params, grads, loss, state, hp)
        steps.append((params, grads, loss, state, hp, f"step {t + 1} of {n_steps}"))
        params, state = expected[0], expected[1]
    return steps
