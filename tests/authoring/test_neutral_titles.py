"""Check titles give nothing away (issue 38, item 4): grading the untouched stub lists every
check, so no title names a trap or states the rule; the trap is named only in a failing result."""
import pytest

from backprop_traps.grader.authoring.findings import FAIL, OK, QuestionReport
from backprop_traps.grader.authoring.neutral_titles import check_titles, leaks
from backprop_traps.grader.checks import load_question
from backprop_traps.grader.engine.question import Question, Trap
from backprop_traps.grader.loading.questions import solution_notebooks
from conftest import graded_in_process

QUESTIONS = list(solution_notebooks())


@pytest.mark.parametrize("title", [
    "training forward: the running averages (momentum, unbiased variance)",
    "scatter kernel: overlapping windows add up, through atomics",
    "decoupled weight decay: p shrinks directly, the moments see the plain gradient",
    "overlapping windows accumulate (k=3, s=2 and k=3, s=1)",
    "dW_xh, dW_hh and db sum over every step (full BPTT, k = T)",
    "conv1d backward: the last-step-only case",
    "a JVP costs one pass: vectors, not matrices",
    "a pre-activation at exactly 0: the ReLU's derivative there is 0",  # issue 51: the answer itself
])
def test_the_issues_give_aways_are_caught(title):
    traps = [Trap("last-step-only", "dw holds one position's contribution.")]
    assert leaks(title, traps), title


@pytest.mark.parametrize("title", ["max-pool backward: overlapping windows (k=3, s=2 and k=3, s=1)",
                                   "accumulated_grads: an uneven last micro-batch",
                                   "inputs left unchanged (and the answers right)",
                                   "backward: finite differences, causal and not",
                                   "a pre-activation at exactly 0: the gradients through the ReLU",
                                   "edge shapes: N = 1, K = 1, K = 2"])
def test_neutral_titles_pass(title):
    assert not leaks(title, [Trap("lost-overlap", "Overlapping windows overwrite.")])


@pytest.mark.parametrize("question", QUESTIONS)
def test_no_title_of_any_question_gives_a_trap_away(question):
    report = QuestionReport(question)
    check_titles(report, load_question(question))
    assert [f.status for f in report.findings] == [OK], report.text()


def test_the_proof_fails_a_leaking_question():
    q = Question("toy", "Toy", traps=[Trap("tie-order", "A tie goes to the last maximum.")])
    q.check("ties go to the first maximum", points=1)(lambda ctx: None)
    report = QuestionReport("toy")
    check_titles(report, q)
    assert report.findings[0].status == FAIL and "first maximum" in report.text()


@pytest.mark.parametrize("question", ["batchnorm_backward", "maxpool_kernel", "adamw_step", "bptt"])
def test_grading_the_untouched_stub_lists_no_trap_and_no_rule(question):
    from backprop_traps.grader.authoring.in_process import InProcessCaller, namespace_from_source, run_checks
    from backprop_traps.grader.loading.notebook import graded_code, parse_notebook
    from backprop_traps.grader.loading.questions import exercise_path
    from backprop_traps.grader.loading.reference import load_solution
    loaded = load_question(question)
    stub = graded_code(parse_notebook(exercise_path(question).read_text(encoding="utf-8")))
    tests = run_checks(loaded, InProcessCaller(namespace_from_source(stub)), load_solution(question), 1234)
    assert tests and not any(t.passed or t.trap for t in tests)
    listed = "\n".join(t.name for t in tests).lower()
    for trap in loaded.traps:
        assert trap.id not in listed and " ".join(trap.id.split("-")) not in listed
    for phrase in ("unbiased variance", "through atomics", "p shrinks directly", "sum over every step"):
        assert phrase not in listed


def test_a_trap_is_named_once_a_check_fails():
    result = graded_in_process("bptt", "def rnn_backward(dhs, x, h0, hs, W_xh, W_hh, k):\n"
                                       "    return walk(dhs, x, h0, hs, W_xh, W_hh, set(range(1, x.shape[0])))\n",
                               after="from backprop_traps.grader.checks.bptt.traps import walk_back\n"
                                     "walk = lambda *a: walk_back(*a)[:5]\n")
    assert "no-carry" in {t.trap for t in result.tests if not t.passed}
