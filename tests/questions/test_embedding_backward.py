"""embedding_backward graded end to end: the question is sound (`grade validate embedding_backward
--quick`: the solution at full marks, the stub at 0, every answer in tests/answers/embedding_backward/
as its name or `# expect:` line says, no free points), the reference agrees with PyTorch's
embedding, each trap costs only its own checks and is named only where it holds, the trap forms
agree with the reference where they should, and the 2^32-row table names a dense allocation
through the real sandbox (its address-space cap). The kernels have their own test.
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.checks.embedding_backward import traps
from backprop_traps.grader.loading.reference import load_solution
from conftest import ANSWERS, graded_in_process, solution_source

ROOT = Path(__file__).resolve().parents[2]
QID = "embedding_backward"
FORWARD = "embedding_forward: rows looked up, with and without padding_idx"
DISTINCT = "embedding_backward: dW against finite differences (distinct ids)"
REPEATS = "embedding_backward: dW against finite differences (ids repeated in the batch)"
PADDING = "embedding_backward: dW against finite differences (a padding_idx)"
SPARSE = ("embedding_backward_sparse: ids and rows on a 5,000-row table (ids repeated, a padding_idx)")
HUGE = "embedding_backward_sparse on a table of 2^32 rows"
UNCHANGED = "inputs left unchanged (and the answers right)"
ref = load_solution(QID)


def failures(result):
    return [(t.name, t.trap, t.feedback[:300]) for t in result.tests if not t.passed]


def answer(name: str) -> str:
    return (ANSWERS / QID / f"{name}.py").read_text()


def test_embedding_backward_is_sound():
    report = validate_question(QID, ROOT, quick=True)
    assert report.ok, report.text()


@pytest.mark.parametrize("padding_idx", [None, 0, 3])
def test_the_reference_agrees_with_torch(padding_idx):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    V, D = 7, 4
    W, ids, dout = rng.standard_normal((V, D)), rng.integers(0, V, size=(3, 9)), rng.standard_normal((3, 9, D))
    W[padding_idx if padding_idx is not None else 0] *= 1.0
    leaf = torch.tensor(W, requires_grad=True)
    torch.nn.functional.embedding(torch.from_numpy(ids), leaf, padding_idx=padding_idx).backward(torch.from_numpy(dout))
    np.testing.assert_allclose(ref.embedding_backward(dout, ids, V, padding_idx), leaf.grad.numpy(), rtol=1e-12)
    sparse_leaf = torch.tensor(W, requires_grad=True)
    torch.nn.functional.embedding(torch.from_numpy(ids), sparse_leaf, padding_idx=padding_idx,
                                  sparse=True).backward(torch.from_numpy(dout))
    grad = sparse_leaf.grad.coalesce()
    unique_ids, rows = ref.embedding_backward_sparse(dout, ids, V, padding_idx)
    dense = np.zeros((V, D))
    dense[grad.indices()[0].numpy()] = grad.values().numpy()
    np.testing.assert_allclose(dense[unique_ids], rows, rtol=1e-12)
    assert padding_idx not in unique_ids.tolist()


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(1, 9), st.integers(1, 12), st.integers(1, 3), st.data())
def test_the_sparse_form_is_the_dense_one_at_its_rows(B, T, V, D, data):
    ids = np.array(data.draw(st.lists(st.integers(0, V - 1), min_size=B * T, max_size=B * T))).reshape(B, T)
    padding_idx = data.draw(st.one_of(st.none(), st.integers(0, V - 1)))
    dout = np.random.default_rng(B * 100 + T).standard_normal((B, T, D))
    dW = ref.embedding_backward(dout, ids, V, padding_idx)
    unique_ids, rows = ref.embedding_backward_sparse(dout, ids, V, padding_idx)
    assert unique_ids.dtype == np.int64 and np.all(np.diff(unique_ids) > 0)
    np.testing.assert_allclose(rows, dW[unique_ids], rtol=1e-12, atol=1e-12)
    untouched = np.setdiff1d(np.arange(V), unique_ids)
    assert not np.any(dW[untouched])
    np.testing.assert_allclose(traps.scatter(dout, ids, V, padding_idx), dW, rtol=1e-12, atol=1e-12)


def test_the_overwrite_forms_equal_the_reference_without_repeats():
    rng = np.random.default_rng(2)
    ids = rng.permutation(10)[:6].reshape(2, 3)
    dout = rng.standard_normal((2, 3, 2))
    for form in traps.overwrite_forms(dout, ids, 10, None):
        np.testing.assert_allclose(form, ref.embedding_backward(dout, ids, 10, None))


@pytest.mark.parametrize("trap, lost", [
    ("overwrite-repeats", {REPEATS, SPARSE, HUGE}),
    ("padding-updated", {PADDING, SPARSE}),
])  # dense-gradient: through the sandbox below (in this process nothing caps an allocation of 2^32 rows)
def test_each_trap_is_named_and_costs_only_its_own_checks(trap, lost):
    result = graded_in_process(QID, answer(trap.replace("-", "_")))
    assert {t.name for t in result.tests if not t.passed} == lost, failures(result)
    assert {t.trap for t in result.tests if not t.passed} == {trap}, failures(result)


def test_both_mistakes_at_once_are_each_named_by_their_own_check():
    """`dW[ids] += dout` over every position, padding included: the repeats check (no padding)
    names the overwrite, the padding check (its other ids distinct) names the padding row."""
    snippet = ("def embedding_backward(dout, ids, V, padding_idx):\n"
               "    dW = np.zeros((V, dout.shape[-1]))\n"
               "    dW[ids.reshape(-1)] += dout.reshape(-1, dout.shape[-1])\n"
               "    return dW\n")
    result = graded_in_process(QID, snippet)
    assert {(t.name, t.trap) for t in result.tests if not t.passed} == {
        (REPEATS, "overwrite-repeats"), (PADDING, "padding-updated")}, failures(result)


@pytest.mark.parametrize("snippet", [
    # the mean over a row's positions instead of their sum: wrong, but no assignment
    "_right = embedding_backward\n"
    "def embedding_backward(dout, ids, V, padding_idx):\n"
    "    counts = np.maximum(np.bincount(ids.ravel(), minlength=V), 1)[:, None]\n"
    "    return _right(dout, ids, V, padding_idx) / counts\n",
    # the padding row set to ones: the padding row is wrong, but not by its positions' gradient
    "_right = embedding_backward\n"
    "def embedding_backward(dout, ids, V, padding_idx):\n"
    "    dW = _right(dout, ids, V, padding_idx)\n"
    "    if padding_idx is not None:\n"
    "        dW[padding_idx] = 1.0\n"
    "    return dW\n",
])
def test_a_different_mistake_is_not_given_a_traps_name(snippet):
    result = graded_in_process(QID, snippet)
    assert result.score < result.max_score
    assert not {t.trap for t in result.tests if not t.passed} - {None}, failures(result)


def test_padding_listed_with_a_zero_row_is_wrong_but_not_padding_updated():
    result = graded_in_process(QID, answer("wrong_padding_in_sparse_ids"))
    failed = {t.name: t for t in result.tests if not t.passed}
    assert SPARSE in failed and failed[SPARSE].trap is None, failures(result)
    assert "with a zero row" in failed[SPARSE].feedback


def test_the_solution_and_the_torch_answer_get_full_marks():
    assert graded_in_process(QID, "").score == 13
    pytest.importorskip("torch")
    result = graded_in_process(QID, answer("torch_answer"), base=False)
    assert result.score == result.max_score == 13, failures(result)


@pytest.mark.parametrize("name, lost", [("dense_gradient", {SPARSE, HUGE}), ("wrong_dense_then_compact", {HUGE})])
def test_a_dense_gradient_is_named_through_the_sandbox(tmp_path, name, lost):
    """In the sandbox the address space is capped (4 GiB), so a V x D array of 2^32 rows cannot
    be allocated whatever the host's overcommit: the dense form is named by its shape on 5,000
    rows, and the answer that builds the dense gradient and keeps its touched rows (the right
    form) by the 2^32-row check, which says the allocation failed."""
    path = tmp_path / f"{name}.py"
    path.write_text(f"# question: {QID}\n" + solution_source(QID) + "\n\n" + answer(name))
    proc = subprocess.run([sys.executable, "-c", "from backprop_traps.grader.cli import main; main()", str(path), "--json"],
                          capture_output=True, text=True, timeout=600)
    report = json.loads(proc.stdout)
    failed = {t["name"]: t for t in report["tests"] if not t["passed"]}
    assert set(failed) == lost, failed
    assert {t["trap"] for t in failed.values()} == {"dense-gradient"}, failed
    assert "MemoryError" in failed[HUGE]["feedback"], failed[HUGE]


@pytest.mark.parametrize("feedback, named", [
    ("embedding_backward_sparse() raised MemoryError: Unable to allocate 512. GiB for an array with shape "
     "(4294967296, 16) and data type float64 (line 2: `dW = np.zeros((V, D))`)", True),
    ("embedding_backward_sparse() raised RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried "
     "to allocate 549755813888 bytes. (line 2: `dW = torch.zeros(V, D)`)", True),
    ("embedding_backward_sparse() raised IndexError: index 7 is out of bounds for axis 0 with size 3 "
     "(line 4: `allocated[v] += g`)", False),
    ("embedding_backward_sparse() raised RuntimeError: shape mismatch (line 4: `allocate(rows)`)", False),
])
def test_only_a_failed_allocation_is_read_as_one(feedback, named):
    from backprop_traps.grader.checks.embedding_backward import allocation_failure
    assert allocation_failure(feedback) is named
