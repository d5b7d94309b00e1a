"""residual_backward graded end to end: the question is sound (`grade validate residual_backward
--quick`: the solution at full marks, the stub at 0, every answer in tests/answers/residual_backward/
as its name or `# expect:` line says, no free points), the reference agrees with PyTorch's autograd
and init, the PyTorch answer gets full marks, each trap costs only its own checks and is named,
the trap forms agree with the reference where they should, and a seed replays. The kernels
have their own test.
"""
from pathlib import Path

import numpy as np
import pytest

from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.checks.residual_backward import probes, traps
from backprop_traps.grader.engine.run import DEFAULT_SEED
from backprop_traps.grader.loading.reference import load_solution
from conftest import ANSWERS, graded_in_process

ROOT = Path(__file__).resolve().parents[2]
QID = "residual_backward"
STATES = "backward with the skip: the gradient reaching every layer"
WEIGHTS = "backward with the skip: every block's weight gradients"
KINK = "a pre-activation at exactly 0: the gradients through the ReLU"
NORMS = "gradient norms through 20 blocks, with the skip and without it"
STD_RELU = "kaiming_std for ReLU layers: the fan_in and the fan_out scale"
STD_LEAKY = "kaiming_std with a leaky slope, and for a linear layer (slope 1)"


def failures(result):
    return [(t.name, t.trap, t.feedback[:300]) for t in result.tests if not t.passed]


def graded(snippet: str, base: bool = True, seed: int = DEFAULT_SEED):
    return graded_in_process(QID, snippet, base, seed)


def answer(name: str) -> str:
    return (ANSWERS / QID / f"{name}.py").read_text()


def test_residual_backward_is_sound():
    report = validate_question(QID, ROOT, quick=True)
    assert report.ok, report.text()


@pytest.mark.parametrize("skip", [True, False])
def test_the_reference_agrees_with_torch_autograd(skip):
    torch = pytest.importorskip("torch")
    ref = load_solution(QID)
    rng = np.random.default_rng(3)
    x, weights = probes.away_from_kinks(rng, ref, 4, 3, 5, 6, skip)
    dout = rng.standard_normal(x.shape)
    hs = ref.residual_forward(x, weights, skip)
    dhs, grads = ref.residual_backward(dout, hs, weights, skip)
    x_t = torch.tensor(x, requires_grad=True)
    ws = [tuple(torch.tensor(w, requires_grad=True) for w in pair) for pair in weights]
    h = x_t
    for W1, W2 in ws:
        branch = torch.relu(h @ W1) @ W2
        h = h + branch if skip else branch
    np.testing.assert_allclose(h.detach().numpy(), hs[-1], rtol=1e-12)
    h.backward(torch.from_numpy(dout))
    np.testing.assert_allclose(dhs[0], x_t.grad.numpy(), rtol=1e-10, atol=1e-12)
    for (dW1, dW2), (W1, W2) in zip(grads, ws):
        np.testing.assert_allclose(dW1, W1.grad.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(dW2, W2.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape, mode, slope", [((512, 128), "fan_in", 0.0), ((96, 384), "fan_out", 0.0),
                                                ((200, 50), "fan_in", 0.2), ((50, 200), "fan_out", 1.0)])
def test_the_scale_is_torchs_kaiming_normal(shape, mode, slope):
    """torch keeps a Linear weight as (out, in): our (D_in, D_out) weight is its transpose."""
    torch = pytest.importorskip("torch")
    w = torch.empty(shape[1], shape[0], dtype=torch.float64)
    torch.manual_seed(0)
    torch.nn.init.kaiming_normal_(w, a=slope, mode=mode, nonlinearity="leaky_relu")
    want = load_solution(QID).kaiming_std(shape, mode, slope)
    assert abs(float(w.std()) / want - 1) < 0.02


def test_the_right_scale_keeps_the_backward_variance_through_30_relu_layers():
    """What kaiming_std promises, measured: fan_out keeps the gradient's size through a deep
    plain ReLU stack of changing widths, Xavier's scale loses half of it per layer."""
    ref = load_solution(QID)
    rng = np.random.default_rng(0)
    widths = [int(w) for w in rng.integers(200, 400, size=31)]
    x = rng.standard_normal((256, widths[0]))

    def input_gradient_size(std_of):
        Ws = [rng.standard_normal((a, b)) * std_of((a, b)) for a, b in zip(widths, widths[1:])]
        zs, h = [], x
        for W in Ws:
            zs.append(h @ W)
            h = np.maximum(zs[-1], 0.0)
        g = rng.standard_normal(h.shape)
        top = np.sqrt(np.mean(g * g))
        for W, z in zip(reversed(Ws), reversed(zs)):
            g = (g * (z > 0)) @ W.T
        return np.sqrt(np.mean(g * g)) / top
    assert 0.5 < input_gradient_size(lambda s: ref.kaiming_std(s, "fan_out", 0.0)) < 2.0
    assert input_gradient_size(lambda s: np.sqrt(2.0 / sum(s))) < 1e-3


def test_torch_answer_gets_full_marks():
    pytest.importorskip("torch")
    result = graded(answer("torch_answer"), base=False)
    assert result.score == result.max_score == 16, failures(result)


@pytest.mark.parametrize("trap, lost", [
    ("identity-missing", {STATES, WEIGHTS, KINK, NORMS}),
    ("skip-counted-twice", {STATES, WEIGHTS, KINK, NORMS}),
    ("fan-swapped", {STD_RELU, STD_LEAKY}),
    ("xavier-with-relu", {STD_RELU, STD_LEAKY}),
])
def test_each_trap_is_named_and_costs_only_its_own_checks(trap, lost):
    result = graded(answer(trap.replace("-", "_")))
    assert {t.name for t in result.tests if not t.passed} == lost, failures(result)
    assert {t.trap for t in result.tests if not t.passed} == {trap}, failures(result)


def test_a_failing_state_says_where_and_shows_the_smallest_stack():
    failed = {t.name: t for t in graded(answer("identity_missing")).tests if not t.passed}
    text = failed[STATES].feedback
    assert "first at layer 3 going down the stack (layer 4 is right)" in text, text
    assert "The smallest input where yours is still wrong" in text and "skip = True" in text, text


@pytest.mark.parametrize("identity", [0, 1, 2])
def test_the_trap_walk_with_one_identity_is_the_reference(identity):
    ref = load_solution(QID)
    rng = np.random.default_rng(identity)
    x, weights = probes.away_from_kinks(rng, ref, 3, 2, 3, 4, True)
    dout = rng.standard_normal(x.shape)
    hs = ref.residual_forward(x, weights, True)
    dhs, grads = traps.walk(dout, hs, weights, identity)
    want = ref.residual_backward(dout, hs, weights, identity == 1)[0] if identity != 2 else None
    if identity == 1:
        np.testing.assert_allclose(dhs, want, rtol=1e-12)
    elif identity == 0:  # the plain stack's backward, on the residual stack's states
        assert not np.allclose(dhs, ref.residual_backward(dout, hs, weights, True)[0])
    assert all(g[0].shape == w[0].shape and g[1].shape == w[1].shape for g, w in zip(grads, weights))


def test_named_traps_are_offered_only_where_they_are_wrong():
    """Without the skip no identity form is offered (the plain stack's backward is identity 0);
    for slope 1 Xavier's form is not offered (no ReLU there)."""
    assert traps.backward_forms(np.ones((1, 2)), np.ones((2, 1, 2)), [(np.eye(2), np.eye(2))], False) == {}
    assert set(traps.std_forms((50, 200), "fan_in", 1.0)) == {"fan-swapped"}


def test_seed_replays():
    a, b = (graded(answer("skip_counted_twice"), seed=7) for _ in range(2))
    assert [t.to_json() for t in a.tests] == [t.to_json() for t in b.tests]
