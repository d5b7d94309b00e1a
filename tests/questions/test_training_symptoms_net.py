"""The shortcuts of training_symptoms' network (net.py) give the bits of the plain arithmetic
they stand for: ``fp16``'s one-pass test on generated tensors, the edge of float16's range, NaN
and inf included; ``Momentum``'s flat buffer against ``v = 0.9 * v + g; p = p - lr * v`` per
parameter, with gains, over many steps."""
import numpy as np
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from backprop_traps.grader.checks.training_symptoms import runs
from backprop_traps.grader.checks.training_symptoms.net import FP16_MAX, Momentum, Net, fp16

EDGE = [FP16_MAX, np.nextafter(FP16_MAX, np.inf), np.nextafter(FP16_MAX, 0.0), FP16_MAX * (1 - 1e-7)]


def plain_fp16(t):
    return np.where(np.abs(t) > FP16_MAX, np.sign(t) * np.inf, t)


def same_bits(a, b) -> bool:
    return a.shape == b.shape and a.tobytes() == b.tobytes()


finite_or_not = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from(EDGE + [-e for e in EDGE] + [0.0, -0.0]),
    st.floats(-2 * FP16_MAX, 2 * FP16_MAX))


@settings(max_examples=300, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=2, max_side=40), elements=finite_or_not))
def test_fp16_is_the_plain_range_check(t):
    with np.errstate(all="ignore"):
        assert same_bits(fp16(t.copy()), plain_fp16(t))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 2000), st.integers(0, 2 ** 32 - 1))
def test_fp16_many_entries_just_inside_and_one_just_past(n, seed):
    """A sum of squares that only just passes must not hide an entry past the range."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(-1, 1, n) * FP16_MAX / np.sqrt(n)
    t[rng.integers(n)] = rng.choice([-1, 1]) * np.nextafter(FP16_MAX, np.inf)
    with np.errstate(all="ignore"):
        assert same_bits(fp16(t.copy()), plain_fp16(t))
        t[t > FP16_MAX], t[t < -FP16_MAX] = FP16_MAX, -FP16_MAX
        assert same_bits(fp16(t.copy()), t)


def test_momentum_steps_are_the_per_parameter_arithmetic():
    rng = np.random.default_rng(3)
    blocks = [runs.block(rng, False) for _ in range(2)]
    blocks[1][2] = 0.0
    net = Net(rng.standard_normal((7, runs.D)), blocks, rng.standard_normal((runs.D, 5)), bn=False)
    plain = [w.copy() for w in net.weights()] + [b[2] for b in net.blocks]
    velocity = [np.zeros_like(p) if isinstance(p, np.ndarray) else 0.0 for p in plain]
    optimiser, lr = Momentum(net, 0.05), 0.05
    for _ in range(25):
        step = [rng.standard_normal(w.shape) for w in net.weights()] + [float(rng.standard_normal()) for _ in net.blocks]
        velocity = [0.9 * v + g for v, g in zip(velocity, step)]
        plain = [p - lr * v for p, v in zip(plain, velocity)]
        optimiser.step(step)
        for got, want in zip(net.weights(), plain):
            assert same_bits(got, want)
        assert [b[2] for b in net.blocks] == plain[len(net.weights()):]
