"""backprop_ninja graded end to end: the solution against PyTorch's autograd, right answers
(the solution, loops, one-hot, PyTorch) at full marks, each trap named, the first wrong gradient
pointed at, the stub at zero; and the question is sound (`grade validate backprop_ninja --quick`;
the kernels have their own test).

The solution, the stub and one trap answer go through the sandbox; the rest are graded in
process (as `grade validate` grades its made-up variants), which runs the same checks.
"""
from types import SimpleNamespace

import numpy as np
import pytest

from backprop_traps.grader.authoring.in_process import InProcessCaller, namespace_from_source, run_checks
from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.checks import load_question
from backprop_traps.grader.engine.run import DEFAULT_SEED, grade_path
from backprop_traps.grader.loading.reference import load_solution
from conftest import ANSWERS, REPO, solution_source

TRAPS = ["embedding-overwrite", "tied-not-summed", "dropout-unscaled", "tanh-derivative-from-input"]
FOLDER = ANSWERS / "backprop_ninja"


def failures(result):
    return [(t.name, t.trap, t.feedback) for t in result.tests if not t.passed]


def graded(snippet: str, base: bool = True, seed: int = DEFAULT_SEED):
    source = (solution_source("backprop_ninja") + "\n\n" if base else "") + snippet
    tests = run_checks(load_question("backprop_ninja"), InProcessCaller(namespace_from_source(source)),
                       load_solution("backprop_ninja"), seed)
    return SimpleNamespace(tests=tests, score=sum(t.points for t in tests),
                           max_score=sum(t.max_points for t in tests))


def test_backprop_ninja_is_sound():
    report = validate_question("backprop_ninja", REPO, quick=True)
    assert report.ok, report.text()


def test_solution_gets_full_marks_and_stub_gets_zero():
    result = grade_path(REPO / "solutions" / "16_backprop_ninja.ipynb")
    assert result.error is None and result.score == result.max_score == 19, result.tests
    stub = grade_path(REPO / "exercises" / "16_backprop_ninja.ipynb")
    assert stub.error is None and stub.score == 0
    assert all("not implemented yet" in t.feedback for t in stub.tests)


def test_solution_matches_pytorch_autograd():
    """The reference itself, against torch with retain_grad on every intermediate."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    ref = load_solution("backprop_ninja")
    rng = np.random.default_rng(0)
    B, T, V, C, H, p = 5, 3, 7, 4, 6, 0.3
    params = {"E": rng.normal(size=(V, C)), "W1": rng.normal(size=(T * C, H)), "b1": rng.normal(size=H),
              "gamma": rng.normal(size=H), "beta": rng.normal(size=H), "W2": rng.normal(size=(H, C)),
              "b2": rng.normal(size=C)}
    idx = np.array([[2, 2, 0], [1, 2, 6], [3, 3, 3], [0, 5, 2], [4, 4, 1]])
    targets = rng.integers(0, V, size=B)
    keep = rng.random((B, H)) >= p
    bits = np.packbits(keep.ravel())
    loss, cache = ref.ninja_forward(params, idx, targets, bits, p, 1e-5)
    grads = ref.ninja_backward(params, cache, idx, targets, bits, p)

    tp = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    t = {"emb": tp["E"][torch.from_numpy(idx)]}
    t["x"] = t["emb"].reshape(B, -1)
    t["hpre"] = t["x"] @ tp["W1"] + tp["b1"]
    t["hln"] = F.layer_norm(t["hpre"], (H,), tp["gamma"], tp["beta"], 1e-5)
    t["h"] = torch.tanh(t["hln"])
    t["hdrop"] = t["h"] * torch.from_numpy(keep.astype(np.float64)) / (1 - p)
    t["z"] = t["hdrop"] @ tp["W2"] + tp["b2"]
    t["logits"] = t["z"] @ tp["E"].T
    for v in t.values():
        v.retain_grad()
    torch_loss = F.cross_entropy(t["logits"], torch.from_numpy(targets))
    torch_loss.backward()
    assert np.isclose(loss, torch_loss.item(), rtol=1e-12)
    for key, value in {**t, **tp}.items():
        if key in cache:
            np.testing.assert_allclose(cache[key], value.detach().numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(grads["d" + key], value.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=key)


@pytest.mark.parametrize("name", ["right_loops", "right_onehot", "torch_answer"])
def test_right_answers_in_other_styles_get_full_marks(name):
    text = (FOLDER / f"{name}.py").read_text()
    if name == "torch_answer":
        pytest.importorskip("torch")
    result = graded(text, base="# question:" not in text)
    assert result.score == result.max_score, failures(result)


@pytest.mark.parametrize("trap", TRAPS)
def test_each_trap_loses_points_and_is_named(trap):
    result = graded((FOLDER / f"{trap.replace('-', '_')}.py").read_text())
    assert result.score < result.max_score
    named = {t.trap for t in result.tests if not t.passed}
    assert named == {trap}, failures(result)


def test_a_trap_answer_is_named_through_the_sandbox(answer_file):
    result = grade_path(answer_file("backprop_ninja", "embedding_overwrite"))
    assert result.error is None and 0 < result.score < result.max_score
    assert {t.trap for t in result.tests if not t.passed} == {"embedding-overwrite"}, failures(result)


def test_a_gradient_downstream_of_the_mistake_points_at_it():
    """dropout-unscaled breaks every gradient below dropout: their checks name dh as the first."""
    result = graded((FOLDER / "dropout_unscaled.py").read_text())
    failed = {t.name: t for t in result.tests if not t.passed}
    first_layer = failed["the first linear layer: dW1, db1, dx and demb"]
    assert "The first gradient that goes wrong along the backward pass is `dh`" in first_layer.feedback
    assert "tanh's backward: dhln" in failed and "the output side: dz, dW2, db2 and dhdrop" not in failed


def test_repeats_averaged_are_named_by_the_distinct_ids_probe():
    """Repeated ids averaged: equal to no known form, right where no id repeats."""
    snippet = (FOLDER / "embedding_overwrite.py").read_text().replace(
        "    dE[idx.ravel()] += demb.reshape(B * T, -1)  # buffered: a repeated id adds only once\n",
        "    for v in np.unique(idx):\n"
        "        dE[v] += demb.reshape(B * T, -1)[idx.ravel() == v].mean(axis=0)\n")
    result = graded(snippet)
    failed = {t.name: t for t in result.tests if not t.passed}
    assert failed["dE where token ids repeat"].trap == "embedding-overwrite"
    assert "dE of the tied matrix: the output layer's gradient plus the embedding's" not in failed


def test_a_forward_without_the_dropout_scale_is_named():
    snippet = solution_source("backprop_ninja").split("def ninja_backward")[0].replace(
        "hdrop = h * keep / (1.0 - p_drop)", "hdrop = h * keep")
    result = graded(snippet)
    failed = {t.name: t for t in result.tests if not t.passed}
    assert failed["forward: the loss and every cached intermediate"].trap == "dropout-unscaled"


def test_seed_replays():
    a, b = (graded((FOLDER / "tied_not_summed.py").read_text(), seed=7) for _ in range(2))
    assert [t.to_json() for t in a.tests] == [t.to_json() for t in b.tests]


def test_a_stub_quoting_a_line_of_the_checks_package_is_a_leak(tmp_path):
    """validate reads every module of a checks package, probes.py and traps.py included."""
    import nbformat
    from backprop_traps.grader.authoring.artifacts import check_stub_files
    from backprop_traps.grader.authoring.findings import QuestionReport
    for folder in ("solutions", "exercises"):
        (tmp_path / folder).mkdir()
        name = "16_backprop_ninja.ipynb"
        (tmp_path / folder / name).write_bytes((REPO / folder / name).read_bytes())
    stub = nbformat.read(str(tmp_path / "exercises" / "16_backprop_ninja.ipynb"), as_version=4)
    stub.cells[0].source += "\n```\n    overwritten = [scatter(prob.idx, g[\"demb\"], V, mode) for mode in (\"last\", \"first\")]\n```"
    nbformat.write(stub, str(tmp_path / "exercises" / "16_backprop_ninja.ipynb"))
    report = QuestionReport("backprop_ninja")
    check_stub_files(report, "backprop_ninja", tmp_path)
    assert not report.ok and "hidden-check line" in report.text()
