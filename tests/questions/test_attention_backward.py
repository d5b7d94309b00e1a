"""attention_backward is sound (`grade validate attention_backward --quick`): through the
sandbox, memory included, the solution, the row-tiled answer (row_blocks.py) and PyTorch's
fused CPU kernels (torch_answer.py) get full marks, the stub gets 0, and each trap's answer
(tests/answers/attention_backward/<trap>.py) loses points with its trap named. Here, in
process and without the two N = 2048 memory checks unless the answer is about memory
(seconds, not minutes): the other forms of each trap (scale_twice.py, ...) are named too,
no answer gets another trap's name, the traps are recognised by behaviour, and the
solution agrees with torch's scaled_dot_product_attention. The kernels have their own test."""
from pathlib import Path

import numpy as np
import pytest

from conftest import ANSWERS, solution_source
from backprop_traps.grader.authoring.in_process import InProcessCaller, namespace_from_source, run_checks
from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.checks import attention_backward as checks
from backprop_traps.grader.checks.attention_backward import probes as attention_probes, traps as attention_traps
from backprop_traps.grader.loading.reference import load_solution

ROOT = Path(__file__).resolve().parents[2]
TRAPS = ["materialises-p", "missing-rowsum", "scale-wrong", "causal-leak", "unstable-softmax"]
OTHER_FORMS = [("scale-wrong", "scale_twice"), ("scale-wrong", "scale_forgotten_in_forward"),
               ("scale-wrong", "scale_forgotten_in_recompute"), ("causal-leak", "causal_leak_in_forward")]
MEMORY_CHECKS = {c.name for c in checks.QUESTION.checks if "peak memory" in c.name}
REF = load_solution("attention_backward")


def failures(results):
    return [(t.name, t.trap, t.feedback) for t in results if not t.passed]


def in_process(source: str, memory: bool = False) -> list:
    """Every check's result for ``source`` (run here, as validate does), memory checks optional."""
    only = {c.name for c in checks.QUESTION.checks if memory or c.name not in MEMORY_CHECKS}
    namespace = namespace_from_source(source)
    return run_checks(checks.QUESTION, InProcessCaller(namespace), REF, 1234, only=only)


def answer(name: str) -> str:
    return (ANSWERS / "attention_backward" / f"{name}.py").read_text()


def test_attention_backward_is_sound():
    report = validate_question("attention_backward", ROOT, quick=True)
    assert report.ok, report.text()


def test_materialising_p_fails_only_the_memory_checks():
    results = in_process(answer("materialises_p"), memory=True)
    failed = [t for t in results if not t.passed]
    assert {t.name for t in failed} == MEMORY_CHECKS, failures(results)
    assert all(t.trap == "materialises-p" and "32 MiB" in t.feedback for t in failed)


@pytest.mark.parametrize("trap, name", [(t, t.replace("-", "_")) for t in TRAPS if t != "materialises-p"]
                         + OTHER_FORMS)
def test_each_form_of_each_trap_names_that_trap_alone(trap, name):
    """Each form is named by its trap, and by no other trap."""
    results = in_process(answer(name))
    named = {t.trap for t in results if not t.passed}
    assert trap in named and named <= {trap, None}, failures(results)


def test_missing_rowsum_is_explained_by_equal_values():
    results = in_process(answer("missing_rowsum"))
    check = next(t for t in results if t.name.startswith("backward: finite differences, non-causal"))
    assert not check.passed and check.trap == "missing-rowsum" and "every row of v" in check.feedback


def test_a_causal_leak_in_the_forward_is_found_by_behaviour():
    """A causal forward that reads token N-1 at earlier rows, in a form no variant equals."""
    snippet = ("_forward = attention_forward\n\n\n"
               "def attention_forward(q, k, v, causal):\n"
               "    o, lse = _forward(q, k, v, causal)\n"
               "    if causal:\n"
               "        o = o + 1e-3 * v[:, -1:]\n"
               "    return o, lse\n")
    results = in_process(solution_source("attention_backward") + "\n\n" + snippet)
    first = next(t for t in results if not t.passed)
    assert first.trap == "causal-leak" and "last token" in first.feedback, failures(results)


def test_a_backward_that_ignores_do_is_not_called_a_leak():
    """Gradient at later keys, but not along do_0: a different mistake, not named causal-leak."""
    snippet = ("_backward = attention_backward\n\n\n"
               "def attention_backward(do, q, k, v, o, lse, causal):\n"
               "    return _backward(np.ones_like(do), q, k, v, o, lse, causal)\n")
    results = in_process(solution_source("attention_backward") + "\n\n" + snippet)
    check = next(t for t in results if t.name.startswith("backward: causal"))
    assert not check.passed and check.trap is None, failures(results)


def test_memory_budget_leaves_room_for_tiles_and_not_for_p():
    budget = attention_traps.memory_budget(attention_probes.MEM_B, attention_probes.MEM_N, attention_probes.MEM_D)
    matrix = attention_probes.MEM_N * attention_probes.MEM_N * 8
    assert budget == 16 * 1024 * 1024 and matrix == 2 * budget  # P whole never fits, even alone
    tiles = 7 * attention_probes.TILE_ROWS * attention_probes.MEM_N * 8
    assert budget - tiles == 4 * attention_probes.MEM_N * attention_probes.MEM_D * 8  # the outputs and one spare (N, d)


def test_huge_scores_really_overflow_a_naive_softmax():
    q, k, _ = checks.huge_scores(np.random.default_rng(0), 1, 6, 4)
    s = q @ k.transpose(0, 2, 1) / 2.0
    assert np.abs(s).min() >= 900 and np.ptp(s, axis=2).max() < 30  # huge, yet close to each other
    with np.errstate(over="ignore", invalid="ignore"):
        assert not np.all(np.isfinite(np.exp(s) / np.exp(s).sum(axis=2, keepdims=True)))


def test_seed_replays():
    a, b = in_process(answer("causal_leak")), in_process(answer("causal_leak"))
    assert [t.to_json() for t in a] == [t.to_json() for t in b]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("B, N, d", [(1, 1, 3), (2, 7, 4), (3, 150, 16)])
def test_the_solution_agrees_with_torch_scaled_dot_product_attention(B, N, d, causal):
    """The reference itself, against torch's scaled_dot_product_attention and autograd."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(N)
    q, k, v, do = (rng.standard_normal((B, N, d)) for _ in range(4))
    o, lse = REF.attention_forward(q, k, v, causal)
    grads = REF.attention_backward(do, q, k, v, o, lse, causal)
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    out = F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
    out.backward(torch.tensor(do))
    scores = tq.detach() @ tk.detach().transpose(1, 2) / np.sqrt(d)
    if causal:
        scores = scores.masked_fill(torch.ones(N, N, dtype=torch.bool).triu(1), float("-inf"))
    np.testing.assert_allclose(o, out.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lse, torch.logsumexp(scores, dim=-1).numpy(), rtol=1e-10, atol=1e-12)
    for got, t in zip(grads, (tq, tk, tv)):
        np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-9, atol=1e-12)
