"""bptt graded end to end: the question is sound (`grade validate bptt --quick`: the solution
at full marks, the stub at 0, every answer in tests/answers/bptt/ as its name or `# expect:`
line says, no free points), the PyTorch answer at full marks, each trap costing only its own
checks, the trap forms agreeing with the reference where they should, and a seed that
replays. The kernels have their own test.
"""
from pathlib import Path

import numpy as np
import pytest

from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.checks.bptt import probes, traps
from backprop_traps.grader.engine.run import DEFAULT_SEED
from backprop_traps.grader.loading.reference import load_solution
from conftest import ANSWERS, graded_in_process

ROOT = Path(__file__).resolve().parents[2]
QID = "bptt"
WEIGHTS = "dW_xh, dW_hh and db (full BPTT, k = T)"
CARRY = "dx and dh0 (full BPTT, k = T)"
TRUNC = "truncated BPTT (k = 3; T = 7 and T = 6)"
LIMITS = "truncation at its limits: k = 1, k = T and k > T"
CLIP, THRESHOLD = ("clip_grad_norm: several tensors over max_norm",
                   "clipping at the threshold: a norm of exactly max_norm, or below, is unchanged")
LONG = "a long sequence (T = 40) whose gradients grow: full BPTT still matches"
UNCHANGED = "inputs left unchanged (and the answers right)"


def failures(result):
    return [(t.name, t.trap, t.feedback[:200]) for t in result.tests if not t.passed]


def graded(snippet: str, base: bool = True, seed: int = DEFAULT_SEED):
    return graded_in_process(QID, snippet, base, seed)


def answer(name: str) -> str:
    return (ANSWERS / QID / f"{name}.py").read_text()


def test_bptt_is_sound():
    report = validate_question(QID, ROOT, quick=True)
    assert report.ok, report.text()


def test_torch_answer_gets_full_marks():
    """torch.nn.RNN with h detached every k steps, and clip_grad_norm_ (in process)."""
    pytest.importorskip("torch")
    result = graded(answer("torch_answer"), base=False)
    assert result.score == result.max_score == 16, failures(result)


@pytest.mark.parametrize("trap, lost", [
    ("last-step-only", {WEIGHTS, TRUNC, LIMITS, LONG}),
    ("no-carry", {WEIGHTS, CARRY, TRUNC, LIMITS, LONG}),
    ("truncation-off-by-one", {TRUNC, LIMITS}),
    ("clip-per-tensor", {CLIP, THRESHOLD}),
])
def test_each_trap_is_named_and_costs_only_its_own_checks(trap, lost):
    result = graded(answer(trap.replace("-", "_")))
    assert {t.name for t in result.tests if not t.passed} == lost, failures(result)
    assert {t.trap for t in result.tests if not t.passed} <= {trap, None}, failures(result)
    assert trap in {t.trap for t in result.tests if not t.passed}, failures(result)


@pytest.mark.parametrize("T, k", [(7, 3), (6, 3), (4, 1), (4, 4), (4, 9), (1, 1)])
def test_the_trap_walk_with_the_right_cuts_is_the_reference(T, k):
    """traps.walk_back makes the wrong variants; with the right cuts it must be the solution."""
    ref = load_solution(QID)
    rng = np.random.default_rng(T * 10 + k)
    x, h0, W_xh, W_hh, b = probes.sequence(rng, T, 2, 3, 4)
    hs = ref.rnn_forward(x, h0, W_xh, W_hh, b)
    dhs = rng.standard_normal(hs.shape)
    got = traps.walk_back(dhs, x, h0, hs, W_xh, W_hh, traps.chunk_starts(T, k))[:5]
    for g, w in zip(got, ref.rnn_backward(dhs, x, h0, hs, W_xh, W_hh, k)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_chunks_counted_from_the_end_are_named_off_by_one():
    snippet = ("_right = rnn_backward\n"
               "def rnn_backward(dhs, x, h0, hs, W_xh, W_hh, k):\n"
               "    T = x.shape[0]\n"
               "    return _right(dhs[::-1].copy(), x, h0, hs, W_xh, W_hh, k) if False else "
               "_walk(dhs, x, h0, hs, W_xh, W_hh, {t for t in range(1, T) if (T - t) % k == 0})\n")
    result = graded("from backprop_traps.grader.checks.bptt.traps import walk_back as _w\n"
                    "def _walk(*a):\n    return _w(*a)[:5]\n" + snippet)
    assert "truncation-off-by-one" in {t.trap for t in result.tests if not t.passed}, failures(result)


def test_a_reset_at_the_top_of_the_loop_is_named_off_by_one_even_without_truncation():
    result = graded(answer("wrong_truncation_reset_at_top"))
    assert {t.name for t in result.tests if not t.passed} == {WEIGHTS, CARRY, TRUNC, LIMITS, LONG}
    assert {t.trap for t in result.tests if not t.passed} == {"truncation-off-by-one"}, failures(result)


def test_clipping_in_place_or_always_loses_points():
    assert THRESHOLD in {t.name for t in graded(answer("wrong_clip_always")).tests if not t.passed}
    failed = {t.name: t for t in graded(answer("wrong_clip_in_place")).tests if not t.passed}
    assert set(failed) == {UNCHANGED} and "grads" in failed[UNCHANGED].feedback


def test_seed_replays():
    a, b = (graded(answer("truncation_off_by_one"), seed=7) for _ in range(2))
    assert [t.to_json() for t in a.tests] == [t.to_json() for t in b.tests]
