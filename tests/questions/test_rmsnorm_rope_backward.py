"""rmsnorm_rope_backward graded end to end: the question is sound (`grade validate
rmsnorm_rope_backward --quick`: the solution at full marks, the stub at 0, every answer in
tests/answers/rmsnorm_rope_backward/ as its name or `# expect:` line says, no free points), the
reference agrees with PyTorch (F.rms_norm and Hugging Face Llama's rotate_half RoPE, autograd
for both backwards) on generated shapes, each trap costs only its own checks and is named,
the trap forms are wrong wherever they are offered, the rotated half's sign is told apart from
a backward turned the wrong way, and a seed replays. The kernels have their own test.
"""
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.checks.rmsnorm_rope_backward import traps
from backprop_traps.grader.engine.run import DEFAULT_SEED
from backprop_traps.grader.loading.reference import load_solution
from conftest import ANSWERS, graded_in_process

ROOT = Path(__file__).resolve().parents[2]
QID = "rmsnorm_rope_backward"
RMS_FWD = "RMSNorm forward: y and rstd"
RMS_DX = "RMSNorm backward: dx against finite differences"
RMS_DGAMMA = "RMSNorm backward: dgamma against finite differences"
ROPE_FWD = "RoPE forward: y"
ROPE_DX = "RoPE backward: dx against finite differences"
EDGES = "edge sizes (N = 1, D = 1, D = 2, a row of zeros) and a 64 x 256 batch: all four functions"
ref = load_solution(QID)


def failures(result):
    return [(t.name, t.trap, t.feedback[:300]) for t in result.tests if not t.passed]


def graded(snippet: str, base: bool = True, seed: int = DEFAULT_SEED):
    return graded_in_process(QID, snippet, base, seed)


def answer(name: str) -> str:
    return (ANSWERS / QID / f"{name}.py").read_text()


def test_rmsnorm_rope_backward_is_sound():
    report = validate_question(QID, ROOT, quick=True)
    assert report.ok, report.text()


shapes = st.tuples(st.integers(1, 5), st.integers(1, 8))


@settings(max_examples=25, deadline=None)
@given(shape=shapes, eps=st.sampled_from([0.0, 1e-5, 0.5]), seed=st.integers(0, 2 ** 16))
def test_rmsnorm_agrees_with_torch(shape, eps, seed):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    x, gamma, dy = rng.normal(size=shape) + 0.5, rng.normal(size=shape[1]), rng.normal(size=shape)
    y, rstd = ref.rmsnorm_forward(x, gamma, eps)
    dx, dgamma = ref.rmsnorm_backward(dy, x, gamma, rstd)
    x_t, g_t = torch.tensor(x, requires_grad=True), torch.tensor(gamma, requires_grad=True)
    y_t = torch.nn.functional.rms_norm(x_t, (shape[1],), g_t, eps)
    y_t.backward(torch.from_numpy(dy))
    np.testing.assert_allclose(y, y_t.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dx, x_t.grad.numpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(dgamma, g_t.grad.numpy(), rtol=1e-8, atol=1e-10)


def hf_rope(torch, x, pos, base):
    """Hugging Face Llama's apply_rotary_pos_emb on one head: rotate_half and a cos/sin of width D."""
    d = x.shape[-1]
    inv_freq = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    emb = torch.cat([torch.from_numpy(pos).double()[:, None] * inv_freq] * 2, dim=-1)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * emb.cos() + torch.cat((-x2, x1), dim=-1) * emb.sin()


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 5), half=st.integers(1, 6), base=st.sampled_from([10.0, 500.0, 10000.0]),
       seed=st.integers(0, 2 ** 16))
def test_rope_agrees_with_hugging_face_llama(n, half, base, seed):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    x, dy, pos = rng.normal(size=(n, 2 * half)), rng.normal(size=(n, 2 * half)), rng.integers(-50, 5000, n)
    x_t = torch.tensor(x, requires_grad=True)
    y_t = hf_rope(torch, x_t, pos, base)
    y_t.backward(torch.from_numpy(dy))
    np.testing.assert_allclose(ref.rope_forward(x, pos, base), y_t.detach().numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(ref.rope_backward(dy, pos, base), x_t.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_torch_answer_gets_full_marks():
    pytest.importorskip("torch")
    result = graded(answer("torch_answer"), base=False)
    assert result.score == result.max_score == 13, failures(result)


@pytest.mark.parametrize("name, trap, lost", [
    ("mean_term_kept", "mean-term-kept", {RMS_DX, EDGES}),
    ("wrong_layernorm_forward", "mean-term-kept", {RMS_FWD, RMS_DX, RMS_DGAMMA, EDGES}),
    ("rms_as_constant", "rms-as-constant", {RMS_DX, EDGES}),
    ("rotated_forward", "rotated-forward", {ROPE_DX, EDGES}),
    ("rotate_half_sign", "rotate-half-sign", {ROPE_FWD, ROPE_DX, EDGES}),
    ("interleaved_pairs", "interleaved-pairs", {ROPE_FWD, ROPE_DX, EDGES}),
])
def test_each_trap_is_named_and_costs_only_its_own_checks(name, trap, lost):
    result = graded(answer(name), base=False)
    assert {t.name for t in result.tests if not t.passed} == lost, failures(result)
    assert {t.trap for t in result.tests if not t.passed} == {trap}, failures(result)


def test_a_right_backward_under_a_sign_flipped_forward_costs_only_the_forward():
    """The backward written out (dy cos - rotate_half(dy) sin) does not call the forward: right."""
    snippet = answer("rotate_half_sign").replace(
        "def rope_backward(dy, pos, base):\n    return rope_forward(dy, -pos, base)",
        "def rope_backward(dy, pos, base):\n"
        "    theta = pos[:, None] * base ** (-np.arange(dy.shape[1] // 2) * 2.0 / dy.shape[1])\n"
        "    cos, sin = np.tile(np.cos(theta), 2), np.tile(np.sin(theta), 2)\n"
        "    return dy * cos + rotate_half(dy) * sin  # the flipped half turns back: right")
    result = graded(snippet, base=False)
    assert {t.name for t in result.tests if not t.passed} == {ROPE_FWD, EDGES}, failures(result)
    assert {t.trap for t in result.tests if not t.passed} == {"rotate-half-sign"}, failures(result)


def test_a_backward_turned_forward_under_a_right_forward_is_not_called_the_sign():
    result = graded("def rope_backward(dy, pos, base):\n    return rope_forward(dy, pos, base)\n")
    assert {t.trap for t in result.tests if not t.passed} == {"rotated-forward"}, failures(result)


def test_a_failing_rmsnorm_backward_shows_the_smallest_batch():
    failed = {t.name: t for t in graded(answer("rms_as_constant"), base=False).tests if not t.passed}
    assert "The smallest input where yours is still wrong" in failed[RMS_DX].feedback, failed[RMS_DX].feedback


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 4), half=st.integers(1, 5), seed=st.integers(0, 2 ** 16))
def test_rope_trap_forms_are_wrong_wherever_a_position_is_not_0(n, half, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2 * half))
    pos = rng.integers(1, 4096, n)
    right_y, right_dx = ref.rope_forward(x, pos, 10000.0), ref.rope_backward(x, pos, 10000.0)
    for trap, forms in traps.rope_forward_forms(ref, x, pos, 10000.0).items():
        for form in forms:
            if trap == "interleaved-pairs" and half == 1:
                np.testing.assert_allclose(form, right_y)  # one pair: both layouts are the same
            else:
                assert not np.allclose(form, right_y), trap
    for trap, forms in traps.rope_backward_forms(ref, x, pos, 10000.0).items():
        for form in forms:
            if not (trap == "interleaved-pairs" and half == 1):
                assert not np.allclose(form, right_dx), trap


def test_the_adjacent_pairs_form_is_gpt_j_rotary():
    """GPT-J's rotate_every_two, written out: pairs (2i, 2i + 1) at base ** (-2i / D)."""
    rng = np.random.default_rng(0)
    x, pos = rng.normal(size=(3, 8)), np.array([0, 5, 300])
    theta = pos[:, None] * 10000.0 ** (-np.arange(0, 8, 2) / 8)        # N, D/2
    want = np.empty_like(x)
    want[:, 0::2] = x[:, 0::2] * np.cos(theta) - x[:, 1::2] * np.sin(theta)
    want[:, 1::2] = x[:, 1::2] * np.cos(theta) + x[:, 0::2] * np.sin(theta)
    np.testing.assert_allclose(traps.rope_forward_forms(ref, x, pos, 10000.0)["interleaved-pairs"][0], want)


def test_rmsnorm_trap_forms_are_wrong_for_rows_away_from_0():
    rng = np.random.default_rng(1)
    x, gamma, dy = rng.normal(size=(4, 6)) + 1.0, rng.normal(size=6), rng.normal(size=(4, 6))
    y, rstd = ref.rmsnorm_forward(x, gamma, 0.0)
    for form_y, form_rstd in traps.rmsnorm_forward_forms(x, gamma, 0.0)["mean-term-kept"]:
        assert not (np.allclose(form_y, y) and np.allclose(form_rstd, rstd))
    dx, dgamma = ref.rmsnorm_backward(dy, x, gamma, rstd)
    forms = traps.rmsnorm_backward_forms(ref, dy, x, gamma, rstd)
    assert all(not np.allclose(f, dx) for fs in forms["dx"].values() for f in fs)
    assert all(not np.allclose(f, dgamma) for fs in forms["dgamma"].values() for f in fs)
    assert np.allclose(forms["dx"]["mean-term-kept"][1].sum(axis=1), 0.0)  # LayerNorm's rows sum to 0
    assert np.allclose((dx * x).sum(axis=1), 0.0) and not np.allclose(dx.sum(axis=1), 0.0)  # RMSNorm's do not


def test_eps_outside_the_root_costs_the_edge_check():
    """1 / (rms + eps) barely differs on ordinary rows (eps = 0 or 0.5 there); small rows (D = 1)
    and a row of zeros, 1 / eps instead of 1 / sqrt(eps), are where it shows."""
    snippet = ("def rmsnorm_forward(x, gamma, eps):\n"
               "    rstd = 1.0 / (np.sqrt((x * x).mean(axis=1)) + eps)\n"
               "    return x * rstd[:, None] * gamma, rstd\n")
    result = graded(snippet)
    failed = {t.name: t for t in result.tests if not t.passed}
    assert set(failed) <= {EDGES, RMS_FWD} and EDGES in failed, failures(result)


def test_seed_replays():
    a, b = (graded(answer("interleaved_pairs"), base=False, seed=7) for _ in range(2))
    assert [t.to_json() for t in a.tests] == [t.to_json() for t in b.tests]
