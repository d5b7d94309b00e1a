"""training_symptoms graded end to end: the question is sound (`grade validate training_symptoms
--quick`), the grader's runs are what they claim (its network's backward matches finite
differences; the reference names the planted cause on runs of other seeds; a trace holds the
contract's fields and nothing that tells the causes apart by itself, so a diagnose that reads
only those scores 0), right answers (loops, a rule table, PyTorch) get full marks, each trap is
named and costs only its own checks, and a seed replays. The kernels have their own test.
"""
from pathlib import Path

import numpy as np
import pytest

from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.checks.training_symptoms import runs
from backprop_traps.grader.checks.training_symptoms.net import Net, cross_entropy
from backprop_traps.grader.engine.run import DEFAULT_SEED
from backprop_traps.grader.loading.reference import load_solution
from conftest import ANSWERS, graded_in_process

ROOT = Path(__file__).resolve().parents[2]
QID = "training_symptoms"
HEALTHY = "diagnose: healthy runs, each grown by a block that starts at zero (and one that is not)"
INIT, LOG0 = "diagnose: weights initialised far too large", "diagnose: a loss that takes the log of 0"
FP16 = "diagnose: a batch past float16's range, hundreds of steps in"
REPEATED, BN = "diagnose: a loader that repeats one batch", "diagnose: BatchNorm left in training mode for validation"
GROWN = "diagnose: a block added at full scale"
FINITE_INIT = "diagnose: weights initialised too large, in a run that stays finite"
DIAGNOSES = {HEALTHY, INIT, LOG0, FP16, REPEATED, BN, GROWN, FINITE_INIT}
FD_CHECK = "gated_block_backward: every gradient, the gain's included, against finite differences"
AT_ZERO = "gated_block_backward at gain 0: the block's gradients at its first step"
KINK = "gated_block_backward at pre-activations of exactly 0"


def failures(result):
    return [(t.name, t.trap, t.feedback[:300]) for t in result.tests if not t.passed]


def graded(snippet: str, base: bool = True, seed: int = DEFAULT_SEED):
    return graded_in_process(QID, snippet, base, seed)


def answer(name: str) -> str:
    return (ANSWERS / QID / f"{name}.py").read_text()


def test_training_symptoms_is_sound():
    report = validate_question(QID, ROOT, quick=True)
    assert report.ok, report.text()


@pytest.mark.parametrize("bn", [False, True])
def test_the_runs_network_backward_matches_finite_differences(bn):
    rng = np.random.default_rng(0)
    D0, C = 5, 4
    blocks = [runs.block(rng, False) for _ in range(2)] + [runs.block(rng, True)]
    blocks[-1][2] = 0.7
    net = Net(rng.standard_normal((D0, runs.D)) * 0.4, blocks, rng.standard_normal((runs.D, C)) * 0.3, bn)
    x, y = rng.standard_normal((6, D0)), rng.integers(0, C, 6)
    logits, cache = net.forward(x)
    grads, dgains = net.backward(cross_entropy(logits, y)[1], cache)
    weights = net.weights()
    for i in (0, 3, len(weights) - 1):  # the input layer, block 1's W1, the head
        W, numeric = weights[i], np.zeros_like(weights[i])
        for j in np.ndindex(W.shape):
            for sign in (1, -1):
                changed = [w.copy() for w in weights]
                changed[i][j] += sign * 1e-6
                net.set_weights(changed)
                numeric[j] += sign * cross_entropy(net.forward(x)[0], y)[0] / 2e-6
        net.set_weights(weights)
        np.testing.assert_allclose(grads[i], numeric, rtol=1e-5, atol=1e-8)
    before = cross_entropy(net.forward(x)[0], y)[0]
    net.blocks[-1][2] += 1e-6
    after = cross_entropy(net.forward(x)[0], y)[0]
    assert abs((after - before) / 1e-6 - dgains[-1]) < 1e-4 * max(1.0, abs(dgains[-1]))


@pytest.mark.parametrize("cause", runs.CAUSES)
def test_the_reference_names_the_planted_cause_on_other_seeds(cause):
    diagnose = load_solution(QID).diagnose
    assert [diagnose(runs.trace(seed, cause, 5)) for seed in (11, 12, 13)] == [cause] * 3


def test_a_trace_holds_the_contracts_fields_and_every_cause_the_same_kinds_of_them():
    """Nothing but the losses and the gradients' norms may tell the causes apart: the fields,
    their dtypes, the validation steps and the one step where the depth grows are drawn alike."""
    seen = {}
    for cause in runs.CAUSES:
        for index in (0, 1):
            trace = runs.trace(DEFAULT_SEED, cause, index)
            assert sorted(trace) == ["depth", "grad_norms", "loss", "num_classes", "val_loss", "val_steps"]
            kinds = tuple((k, np.asarray(v).dtype.kind, np.shape(v)[:1]) for k, v in sorted(trace.items()))
            seen.setdefault(kinds, set()).add(cause)
            grown = np.flatnonzero(np.diff(trace["depth"]))
            assert len(grown) == 1 and 100 <= grown[0] + 1 <= 200 and trace["depth"][-1] == trace["depth"][0] + 1
            assert trace["grad_norms"].shape[1] == 2 + 2 * int(trace["depth"][-1])
            np.testing.assert_array_equal(trace["val_steps"], np.arange(runs.VAL_EVERY - 1, runs.S, runs.VAL_EVERY))
    assert len(seen) == 1, "a field's type or length differs with the cause"


def test_every_diagnosis_check_pairs_two_causes_whose_traces_differ_only_in_symptoms():
    from backprop_traps.grader.checks.training_symptoms import PLAN
    assert set(PLAN) == DIAGNOSES
    for name, plan in PLAN.items():
        pairs = [(a, b) for a in plan for b in plan if a[1] == b[1] and a[0] != b[0]]
        assert pairs, name
        for (cause_a, index), (cause_b, _) in pairs:
            a, b = runs.trace(DEFAULT_SEED, cause_a, index), runs.trace(DEFAULT_SEED, cause_b, index)
            assert a["num_classes"] == b["num_classes"] and a["grad_norms"].shape == b["grad_norms"].shape
            np.testing.assert_array_equal(a["depth"], b["depth"])
            np.testing.assert_array_equal(a["val_steps"], b["val_steps"])


@pytest.mark.parametrize("reader", [
    "return CAUSES[trace['num_classes'] % 7]",
    "return CAUSES[int(np.argmax(np.diff(trace['depth']))) % 7]",
    "return CAUSES[trace['grad_norms'].shape[1] % 7]",
    "return CAUSES[(len(trace['val_steps']) + trace['num_classes'] * 3) % 7]",
] + [f"return {cause!r}" for cause in runs.CAUSES])
def test_a_diagnose_that_reads_only_what_every_trace_holds_alike_scores_0(reader):
    snippet = (f"CAUSES = {list(runs.CAUSES)!r}\n\n\ndef diagnose(trace):\n    {reader}\n")
    result = graded(snippet)
    assert sum(t.points for t in result.tests if t.name in DIAGNOSES) == 0, failures(result)


def test_the_metadata_answer_in_the_corpus_scores_0_on_every_diagnosis():
    result = graded(answer("wrong_reads_metadata_only"))
    assert not [t for t in result.tests if t.name in DIAGNOSES and t.passed], failures(result)
    assert all(t.trap is None for t in result.tests), failures(result)


def test_an_init_too_large_that_stays_finite_is_read_from_its_first_loss():
    """Issue 50 item 13: an init-scale run a clipped loop keeps finite starts far above ln C,
    and only that tells it from a healthy run of its index; an answer that knows an init too
    large only by its NaN calls it healthy, and the trap says so."""
    finite, healthy = runs.trace(DEFAULT_SEED, "init-scale", 2), runs.trace(DEFAULT_SEED, "healthy", 2)
    assert np.isfinite(finite["loss"]).all() and np.isfinite(finite["val_loss"]).all()
    assert finite["loss"][0] > 3 * np.log(finite["num_classes"]) > 2 * healthy["loss"][0]
    result = graded(answer("wrong_init_only_when_nan"))
    assert {t.name for t in result.tests if not t.passed} == {FINITE_INIT}, failures(result)
    assert {t.trap for t in result.tests if not t.passed} == {"initial-loss-ignored"}, failures(result)


def test_torch_answer_gets_full_marks():
    pytest.importorskip("torch")
    result = graded(answer("torch_answer"), base=False)
    assert result.score == result.max_score == 21, failures(result)


@pytest.mark.parametrize("trap, lost", [
    ("nan-timing-ignored", {FP16}),
    ("initial-loss-ignored", {INIT, LOG0, FP16, FINITE_INIT}),  # the fp16 check holds an init-scale run too
    ("smooth-loss-trusted", {REPEATED, BN}),        # the BatchNorm check holds a repeated-batch run
    ("val-gap-conflated", {REPEATED, BN}),
    ("end-of-run-only", {GROWN, HEALTHY}),          # the healthy check holds a grown run
    ("gain-not-in-weight-grads", {FD_CHECK, AT_ZERO, KINK}),
    ("zero-gain-no-gradient", {FD_CHECK, AT_ZERO, KINK}),
])
def test_each_trap_is_named_and_costs_only_its_own_checks(trap, lost):
    result = graded(answer(trap.replace("-", "_")))
    assert {t.name for t in result.tests if not t.passed} == lost, failures(result)
    assert {t.trap for t in result.tests if not t.passed} == {trap}, failures(result)


def test_a_wrong_diagnosis_shows_what_the_run_logged():
    failed = {t.name: t for t in graded(answer("nan_timing_ignored")).tests if not t.passed}
    text = failed[FP16].feedback
    assert "expected 'fp16-overflow', got 'init-scale'" in text and "first non-finite loss: step" in text, text
    assert "ln C =" in text and "validation loss:" in text, text


def test_the_cached_traces_cannot_be_changed_by_a_check():
    trace = runs.trace(DEFAULT_SEED, "healthy", 0)
    with pytest.raises(ValueError):
        trace["loss"][0] = 0.0


def test_seed_replays():
    a, b = (graded(answer("val_gap_conflated"), seed=7) for _ in range(2))
    assert [t.to_json() for t in a.tests] == [t.to_json() for t in b.tests]


@pytest.mark.parametrize("cause, index", [("init-scale", 0), ("init-scale", 1), ("fp16-overflow", 0)])
def test_a_dead_run_is_written_as_the_computed_one_would_be(monkeypatch, cause, index):
    """A run whose network is all NaN stops computing (``runs.logged_dead``): its trace, and
    every run drawn after it from the same generator, are the computed ones bit for bit."""
    from backprop_traps.grader.checks.training_symptoms import runs
    seed = 20261202
    skipped = runs.trained(seed, cause, index)
    monkeypatch.setattr(runs, "SKIP_DEAD", False)
    computed = runs.trained(seed, cause, index)
    assert np.isnan(skipped["loss"][-1])  # the case the skip is for
    for key in computed:
        assert np.asarray(skipped[key]).tobytes() == np.asarray(computed[key]).tobytes(), key
    # the generator advanced alike: the next run drawn from it is the same run too
    alike, first, second = runs.shared(seed, index), np.random.default_rng(5), np.random.default_rng(5)
    with np.errstate(all="ignore"):  # as ``trained`` runs them: these runs overflow on purpose
        monkeypatch.setattr(runs, "SKIP_DEAD", True)
        runs.train(first, cause, alike)
        monkeypatch.setattr(runs, "SKIP_DEAD", False)
        runs.train(second, cause, alike)
    assert first.bit_generator.state == second.bit_generator.state
