"""moe_router_backward graded end to end: the question is sound (`grade validate
moe_router_backward --quick`: the solution at full marks, the stub at 0, every answer in
tests/answers/moe_router_backward/ as its name or `# expect:` line says, no free points), the
reference agrees with PyTorch's autograd, the PyTorch answer gets full marks, each trap costs
only its own checks and is named, the trap forms are what they claim, the probes draw what
they promise, and a seed replays. The kernels have their own test.
"""
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.checks.moe_router_backward import probes, traps
from backprop_traps.grader.engine.run import DEFAULT_SEED
from backprop_traps.grader.loading.reference import load_solution
from conftest import ANSWERS, graded_in_process

ROOT = Path(__file__).resolve().parents[2]
QID = "moe_router_backward"
SELECTION = "router_forward: idx and gates, k = 2 of 8 experts"
AUX_LOSS = "router_forward: aux_loss, k = 2 and k = 1"
GATES = "router_backward with aux_coef = 0: dx and dWr, k = 2 of 6 experts"
WITH_AUX = "router_backward with aux_coef = 0.5: dx and dWr, k = 2 of 6 experts"
EDGE_K = "router_forward and router_backward with k = 1 and with k = E"
TIE = "equal logits at the k-th place: idx, gates, dx and dWr"
UNCHANGED = "inputs left unchanged (and the answers right)"


def failures(result):
    return [(t.name, t.trap, t.feedback[:300]) for t in result.tests if not t.passed]


def graded(snippet: str, base: bool = True, seed: int = DEFAULT_SEED):
    return graded_in_process(QID, snippet, base, seed)


def answer(name: str) -> str:
    return (ANSWERS / QID / f"{name}.py").read_text()


def test_moe_router_backward_is_sound():
    report = validate_question(QID, ROOT, quick=True)
    assert report.ok, report.text()


@pytest.mark.parametrize("k, aux_coef", [(1, 0.3), (2, 0.0), (3, 0.5), (6, 0.2)])
def test_the_reference_agrees_with_torch_autograd(k, aux_coef):
    torch = pytest.importorskip("torch")
    ref = load_solution(QID)
    rng = np.random.default_rng(k)
    N, D, E = 9, 4, 6
    x, Wr = probes.tie_free(rng, N, D, E, k)
    dgates = rng.standard_normal((N, k))
    gates, idx, aux_loss = ref.router_forward(x, Wr, k, aux_coef)
    xt, Wt = torch.tensor(x, requires_grad=True), torch.tensor(Wr, requires_grad=True)
    logits = xt @ Wt
    values, chosen = torch.topk(logits, k, dim=1)
    gates_t = torch.softmax(values, dim=1)
    f = torch.bincount(chosen.reshape(-1), minlength=E).double() / (N * k)
    aux_t = aux_coef * E * torch.sum(f * torch.softmax(logits, dim=1).mean(dim=0))
    np.testing.assert_array_equal(idx, chosen.numpy())
    np.testing.assert_allclose(gates, gates_t.detach().numpy(), rtol=1e-12)
    assert abs(aux_loss - float(aux_t)) < 1e-12
    (torch.sum(torch.from_numpy(dgates) * gates_t) + aux_t).backward()
    dx, dWr = ref.router_backward(dgates, x, Wr, idx, aux_coef)
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dWr, Wt.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_torch_answer_gets_full_marks():
    pytest.importorskip("torch")
    result = graded(answer("torch_answer"), base=False)
    assert result.score == result.max_score == 12, failures(result)


@pytest.mark.parametrize("trap, lost", [
    ("unselected-gradient", {GATES, WITH_AUX, EDGE_K, TIE}),
    ("softmax-then-topk", {SELECTION, GATES, WITH_AUX, EDGE_K, TIE, UNCHANGED}),
    ("aux-detached", {WITH_AUX, EDGE_K, TIE}),
])
def test_each_trap_is_named_and_costs_only_its_own_checks(trap, lost):
    result = graded(answer(trap.replace("-", "_")))
    assert {t.name for t in result.tests if not t.passed} == lost, failures(result)
    named = {t.trap for t in result.tests if not t.passed and t.name != UNCHANGED}
    assert named == {trap}, failures(result)


def test_a_tie_rule_answer_loses_only_the_tie_check_and_is_told_where():
    result = graded(answer("wrong_tie_to_higher_index"))
    failed = [t for t in result.tests if not t.passed]
    assert [t.name for t in failed] == [TIE] and failed[0].trap is None, failures(result)
    assert "`idx` from router_forward is wrong" in failed[0].feedback and "token n" in failed[0].feedback


def test_the_right_form_is_the_reference_and_each_trap_form_differs():
    ref = load_solution(QID)
    rng = np.random.default_rng(5)
    N, D, E, k = 6, 3, 7, 2
    x, Wr = probes.tie_free(rng, N, D, E, k)
    idx = ref.router_forward(x, Wr, k, 0.4)[1]
    dgates = rng.standard_normal((N, k))
    gate = traps.gate_dlogits(dgates, x, Wr, idx)
    dlogits = gate["right"] + traps.aux_dlogits(x, Wr, idx, 0.4)
    want_dx, want_dWr = ref.router_backward(dgates, x, Wr, idx, 0.4)
    np.testing.assert_allclose(dlogits @ Wr.T, want_dx, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(x.T @ dlogits, want_dWr, rtol=1e-12, atol=1e-14)
    unselected = np.ones((N, E), dtype=bool)
    np.put_along_axis(unselected, idx, False, axis=1)
    assert np.all(gate["right"][unselected] == 0)
    for trap in ("unselected-gradient", "softmax-then-topk"):  # each leaks to unselected experts
        for wrong in gate[trap]:
            assert np.max(np.abs(wrong[unselected])) > 1e-6, trap
    forms = traps.backward_forms(dgates, x, Wr, idx, 0.4)
    for trap, wrongs in forms["dWr"].items():
        assert all(not np.allclose(w, want_dWr) for w in wrongs), trap
    assert "aux-detached" not in traps.backward_forms(dgates, x, Wr, idx, 0.0)["dx"]
    sums = traps.forward_forms(x, Wr, idx)["softmax-then-topk"][0].sum(axis=1)
    assert np.all(sums < 1)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), N=st.integers(1, 9), E=st.integers(2, 9), data=st.data())
def test_probes_draw_what_they_promise(seed, N, E, data):
    k = data.draw(st.integers(1, E))
    rng = np.random.default_rng(seed)
    x, Wr = probes.tie_free(rng, N, 4, E, k)
    assert probes.gaps_ok(x @ Wr, k)
    x, Wr = probes.tied(rng, N, 3, E, k)
    assert np.array_equal(x, np.round(x)) and np.array_equal(Wr, np.round(Wr))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), N=st.integers(1, 8), E=st.integers(2, 8), data=st.data())
def test_the_forward_on_ties_follows_a_stable_sort(seed, N, E, data):
    """Integer logits with many ties: idx is a stable descending sort's first k, gates sum to 1,
    and at an even routing the balancing loss is aux_coef."""
    k = data.draw(st.integers(1, E))
    ref = load_solution(QID)
    rng = np.random.default_rng(seed)
    x, Wr = probes.tied(rng, N, 3, E, k)
    gates, idx, _ = ref.router_forward(x, Wr, k, 0.7)
    logits = x @ Wr
    for n in range(N):
        assert list(idx[n]) == sorted(range(E), key=lambda e: (-logits[n, e], e))[:k]
    np.testing.assert_allclose(gates.sum(axis=1), 1.0)
    even = ref.router_forward(np.eye(E), np.eye(E), 1, 0.7)[2]  # token e picks expert e
    assert abs(even - 0.7) < 1e-12


def test_seed_replays():
    a, b = (graded(answer("unselected_gradient"), seed=7) for _ in range(2))
    assert [t.to_json() for t in a.tests] == [t.to_json() for t in b.tests]
