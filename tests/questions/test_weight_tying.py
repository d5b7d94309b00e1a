"""weight_tying graded end to end: the question is sound (`grade validate weight_tying --quick`:
the solution at full marks, the stub at 0, every answer in tests/answers/weight_tying/ as its
name or `# expect:` line says, no free points), the reference agrees with PyTorch's autograd
and SGD on generated shapes (V = D and V != D), the trap forms' two shares add up to the
reference, each trap costs only its own checks and is named where its check can see it, and a
seed replays. The kernels have their own test.
"""
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.checks.weight_tying import traps
from backprop_traps.grader.engine.run import DEFAULT_SEED
from backprop_traps.grader.loading.reference import load_solution
from conftest import ANSWERS, graded_in_process

ROOT = Path(__file__).resolve().parents[2]
QID = "weight_tying"
REPEATED = "tied_lm_backward: dE with V = 11, D = 4, ids repeated"
SQUARE = "tied_lm_backward: dE and dW with V = D = 6, ids distinct"
DW = "tied_lm_backward: dW with V = 9, D = 3"
TRAIN = "tied_lm_train: three steps, the matrix each use reads, W and the losses"


def failures(result):
    return [(t.name, t.trap, t.feedback[:300]) for t in result.tests if not t.passed]


def graded(snippet: str, base: bool = True, seed: int = DEFAULT_SEED):
    return graded_in_process(QID, snippet, base, seed)


def answer(name: str) -> str:
    return (ANSWERS / QID / f"{name}.py").read_text()


def draw(seed, V, D, N):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((V, D)), rng.standard_normal((D, D)) * 0.8 / np.sqrt(D),
            rng.integers(0, V, size=N), rng.integers(0, V, size=N))


def test_weight_tying_is_sound():
    report = validate_question(QID, ROOT, quick=True)
    assert report.ok, report.text()


@settings(max_examples=25, deadline=None)
@given(V=st.integers(1, 9), D=st.integers(1, 9), N=st.integers(1, 8), seed=st.integers(0, 2 ** 16))
def test_the_reference_agrees_with_torch_autograd(V, D, N, seed):
    torch = pytest.importorskip("torch")
    ref = load_solution(QID)
    E, W, ids, targets = draw(seed, V, D, N)
    loss, cache = ref.tied_lm_forward(E, W, ids, targets)
    dE, dW = ref.tied_lm_backward(E, W, cache, ids, targets)
    E_t, W_t = torch.tensor(E, requires_grad=True), torch.tensor(W, requires_grad=True)
    h = torch.tanh(torch.nn.functional.embedding(torch.from_numpy(ids), E_t) @ W_t)
    loss_t = torch.nn.functional.cross_entropy(h @ E_t.T, torch.from_numpy(targets))
    loss_t.backward()
    assert abs(loss - loss_t.item()) < 1e-12
    np.testing.assert_allclose(cache["h"], h.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(dE, E_t.grad.numpy(), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(dW, W_t.grad.numpy(), rtol=1e-10, atol=1e-13)


def test_the_reference_training_is_torch_sgd_on_one_tied_parameter():
    torch = pytest.importorskip("torch")
    ref = load_solution(QID)
    E, W, ids, targets = draw(5, 7, 3, 6)
    E_embed, E_out, W_after, losses = ref.tied_lm_train(E, W, ids, targets, 0.4, 4)
    E_t, W_t = torch.nn.Parameter(torch.tensor(E)), torch.nn.Parameter(torch.tensor(W))
    optimizer = torch.optim.SGD([E_t, W_t], lr=0.4)
    for k in range(4):
        optimizer.zero_grad()
        h = torch.tanh(E_t[torch.from_numpy(ids)] @ W_t)
        loss = torch.nn.functional.cross_entropy(h @ E_t.T, torch.from_numpy(targets))
        loss.backward()
        optimizer.step()
        assert abs(losses[k] - loss.item()) < 1e-12
    np.testing.assert_allclose(E_embed, E_t.detach().numpy(), rtol=1e-10)
    np.testing.assert_array_equal(E_embed, E_out)
    np.testing.assert_allclose(W_after, W_t.detach().numpy(), rtol=1e-10)


@pytest.mark.parametrize("V, D", [(6, 6), (11, 4), (2, 5)])
def test_the_two_shares_add_up_to_the_reference(V, D):
    """What the trap forms are built from: each read's share, and their sum is the gradient."""
    ref = load_solution(QID)
    E, W, ids, targets = draw(V * D, V, D, 7)
    loss, share_in, share_out, share_out_T, dW = traps.parts(E, E, W, ids, targets)
    want_loss, cache = ref.tied_lm_forward(E, W, ids, targets)
    want_dE, want_dW = ref.tied_lm_backward(E, W, cache, ids, targets)
    assert abs(loss - want_loss) < 1e-12
    np.testing.assert_allclose(share_in + share_out, want_dE, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(share_out_T, share_out.T, rtol=1e-12)
    np.testing.assert_allclose(dW, want_dW, rtol=1e-12, atol=1e-14)


def test_the_right_trajectory_is_the_reference_and_every_trap_trajectory_differs():
    ref = load_solution(QID)
    E, W, ids, targets = draw(1, 9, 4, 7)
    want = ref.tied_lm_train(E, W, ids, targets, 0.4, 3)
    right = traps.trajectory(E, W, ids, targets, 0.4, 3, "sum", "sum")
    for got, expected in zip(right, want):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
    for rule_in, rule_out in traps.UNTIED + traps.ONE_PATH:
        wrong = traps.trajectory(E, W, ids, targets, 0.4, 3, rule_in, rule_out)
        assert not np.allclose(wrong[0], want[0]) or not np.allclose(wrong[1], want[1]), (rule_in, rule_out)
        assert not np.allclose(wrong[3][1:], want[3][1:]), (rule_in, rule_out)  # the losses from step 2 on


def test_the_transposed_forms_are_offered_by_value_only_where_v_equals_d():
    E, W, ids, targets = draw(2, 11, 4, 6)
    forms = traps.backward_forms(E, W, ids, targets)
    assert forms["dW"] == {} and all(f.shape == (4, 11) for f in forms["dE"]["output-transposed"])
    E, W, ids, targets = draw(3, 5, 5, 6)
    forms = traps.backward_forms(E, W, ids, targets)
    assert set(forms["dW"]) == {"output-transposed"}
    assert all(f.shape == (5, 5) for f in forms["dE"]["output-transposed"])


def test_torch_answer_gets_full_marks():
    pytest.importorskip("torch")
    result = graded(answer("torch_answer"), base=False)
    assert result.score == result.max_score == 12, failures(result)


@pytest.mark.parametrize("name, trap, lost", [
    ("one_path_only", "one-path-only", {REPEATED, SQUARE, TRAIN}),
    ("wrong_embedding_share_only", "one-path-only", {REPEATED, SQUARE, TRAIN}),
    ("untied_copy", "untied-copy", {TRAIN}),
    ("wrong_rebinding_unties", "untied-copy", {TRAIN}),
])
def test_each_trap_is_named_and_costs_only_its_own_checks(name, trap, lost):
    result = graded(answer(name))
    assert {t.name for t in result.tests if not t.passed} == lost, failures(result)
    assert {t.trap for t in result.tests if not t.passed} == {trap}, failures(result)


@pytest.mark.parametrize("name", ["output_transposed", "wrong_dh_through_transpose"])
def test_the_transposed_layout_is_named_by_value_where_v_equals_d_and_fails_elsewhere(name):
    """With V != D the transposed product cannot even be formed: those checks fail on the
    learner's own error (and name nothing); with V = D it runs, and its values name it."""
    result = graded(answer(name))
    failed = {t.name: t for t in result.tests if not t.passed}
    assert set(failed) == {REPEATED, SQUARE, DW, TRAIN}, failures(result)
    assert failed[SQUARE].trap == "output-transposed", failures(result)
    assert {t.trap for t in failed.values()} <= {"output-transposed", None}, failures(result)
    assert "raised" in failed[REPEATED].feedback, failures(result)


def test_a_transposed_dE_of_shape_d_by_v_is_named_by_its_shape():
    snippet = ("_right_backward = tied_lm_backward\n\n\ndef tied_lm_backward(E, W, cache, ids, targets):\n"
               "    dE, dW = _right_backward(E, W, cache, ids, targets)\n    return dE.T.copy(), dW\n")
    failed = {t.name: t for t in graded(snippet).tests if not t.passed}
    assert failed[REPEATED].trap == "output-transposed", failed[REPEATED].feedback
    assert "has shape (4, 11), expected (11, 4)" in failed[REPEATED].feedback


def test_a_failing_dE_says_which_rows_differ():
    failed = {t.name: t for t in graded(answer("wrong_buffered_scatter")).tests if not t.passed}
    assert failed[REPEATED].trap is None
    assert "only in token v =" in failed[REPEATED].feedback, failed[REPEATED].feedback


def test_seed_replays():
    a, b = (graded(answer("untied_copy"), seed=7) for _ in range(2))
    assert [t.to_json() for t in a.tests] == [t.to_json() for t in b.tests]
