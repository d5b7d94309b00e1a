"""ddp_accumulation graded end to end: the question is sound (`grade validate ddp_accumulation
--quick`), each trap costs only its own checks, the all-reduce is counted by the grader (through
the real sandbox, where a learner's own copies of the helpers are replaced), the traffic check
refuses a count that did not come from the ranks' own gradients, and the grader's collective
refuses malformed input with a sentence (generated input)."""
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.checks.ddp_accumulation import collective
from backprop_traps.grader.checks.ddp_accumulation.collective import Collective
from backprop_traps.grader.engine.run import grade_path
from conftest import ANSWERS, graded_in_process

ROOT = Path(__file__).resolve().parents[2]
QID = "ddp_accumulation"
EVEN, SHORT_MICRO, SHORT_SHARD, EDGES = (
    "ddp_grads: equal shards whose micro-batches divide them",
    "ddp_grads: equal shards with a shorter last micro-batch",
    "ddp_grads: a shorter last shard",
    "ddp_grads: one rank, micro_batch >= the shard, one-row shards")
TRAFFIC = "ddp_grads: the all-reduce's traffic (R=3, 4 micro-steps per rank)"
VALUES = {EVEN, SHORT_MICRO, SHORT_SHARD, EDGES, TRAFFIC}


def failures(result):
    return [(t.name, t.trap, t.feedback[:300]) for t in result.tests if not t.passed]


def answer(name: str) -> str:
    return (ANSWERS / QID / f"{name}.py").read_text()


def test_ddp_accumulation_is_sound():
    report = validate_question(QID, ROOT, quick=True)
    assert report.ok, report.text()


@pytest.mark.parametrize("trap, lost", [
    ("summed-not-averaged", VALUES),
    ("all-reduce-every-micro-step", {TRAFFIC}),
    ("local-batch-divisor", {SHORT_SHARD}),
    ("ranks-not-synced", VALUES),
])
def test_each_trap_is_named_and_costs_only_its_own_checks(trap, lost):
    result = graded_in_process(QID, answer(trap.replace("-", "_")))
    assert {t.name for t in result.tests if not t.passed} == lost, failures(result)
    assert {t.trap for t in result.tests if not t.passed} - {None} == {trap}, failures(result)


def test_the_per_step_trap_is_told_by_its_count():
    result = graded_in_process(QID, answer("all_reduce_every_micro_step"))
    feedback = next(t.feedback for t in result.tests if t.name == TRAFFIC)
    assert "84 values per rank in 4 calls, 4 times the gradient's 21 entries" in feedback, feedback
    assert "With micro_batch=2 (6 micro-steps) it sent 126." in feedback, feedback


@pytest.mark.parametrize("name, says", [
    ("wrong_bypasses_all_reduce", "never called all_reduce"),
    ("wrong_keeps_a_copy", "never called all_reduce"),
    ("wrong_token_through_collective", "is not its own shard's gradient"),
    ("wrong_double_all_reduce", "One all-reduce of each entry per step is enough"),
])
def test_traffic_that_did_not_come_from_the_ranks_costs_the_traffic_check_alone(name, says):
    result = graded_in_process(QID, answer(name))
    assert [t.name for t in result.tests if not t.passed] == [TRAFFIC], failures(result)
    assert says in next(t.feedback for t in result.tests if not t.passed)


@pytest.mark.parametrize("name, lost", [
    ("torch_answer", set()),
    ("all_reduce_every_micro_step", {TRAFFIC}),
])
def test_the_sandbox_counts_in_the_grader(answer_file, name, lost):
    """Through the real sandbox: the grader's all_reduce replaces the setup cell's, and a learner
    whose own tally function claims one call gets no say."""
    lie = ("\n\ndef take_all_reduced():\n    return 0\n\n\n"
           "def all_reduce(tensors):\n    return [sum(tensors)] * len(tensors)\n")
    path = answer_file(QID, name, base=name != "torch_answer")
    path.write_text(path.read_text() + lie)
    result = grade_path(path, root=ROOT, seed=7)
    assert result.error is None, result.error
    assert {t.name for t in result.tests if not t.passed} == lost, failures(result)


def test_a_learners_collective_reaches_the_grader_only_as_arrays():
    """The helper's all_reduce sends one array per rank, the grader sums and counts them; the
    learner's tally is separate from the record the checks read."""
    service = Collective()
    service.begin(2)
    out = service.all_reduce([np.ones(3), np.arange(3.0)])
    assert [o.tolist() for o in out] == [[1.0, 2.0, 3.0]] * 2
    assert service.take_learner_tally() == 3 and service.take_learner_tally() == 0
    assert service.elements == 3 and len(service.calls) == 1
    with pytest.raises(ValueError, match="one array per rank"):
        service.all_reduce([np.ones(3)])
    helpers, services = collective.services()
    assert "_grader_ask" in helpers and set(services) == {"all_reduce", "take_all_reduced", "_collective"}


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.none(), st.integers(), st.text(max_size=5),
                 st.lists(st.one_of(st.none(), st.integers(), st.floats(), st.text(max_size=3),
                                    st.lists(st.floats(allow_nan=False), max_size=3)), max_size=4),
                 st.lists(st.integers(0, 4).map(lambda n: np.zeros(n)), min_size=1, max_size=4)))
def test_malformed_collective_input_is_refused_with_a_sentence(value):
    """Whatever the child sends, the grader's all_reduce answers a sum or raises ValueError (which
    the channel sends back as a sentence), never anything else, and counts only what it summed."""
    service = Collective()
    service.begin(3)
    try:
        out = service.all_reduce(value)
    except ValueError as e:
        assert str(e) and service.elements == 0
        return
    assert len(out) == 3 and service.elements == out[0].size


def test_honest_traffic_is_told_from_a_token():
    rng = np.random.default_rng(0)
    own = [rng.standard_normal(21) for _ in range(3)]
    honest = Collective()
    honest.begin(3)
    honest.all_reduce([np.array([5.0])] * 3)                      # a row count: bookkeeping
    honest.all_reduce([o[::-1].reshape(3, 7) / 19 for o in own])  # any layout, any scale
    assert collective.own_gradients(honest, own, 21) is None
    bucket = Collective()  # the row count in the gradient's own bucket, one call
    bucket.begin(3)
    bucket.all_reduce([np.concatenate([2 * o, [7.0]]) for o in own])
    assert collective.own_gradients(bucket, own, 21) is None
    entries = Collective()  # the count, then one call per gradient entry: more calls than any search
    entries.begin(3)
    entries.all_reduce([np.array([7.0])] * 3)
    for i in range(21):
        entries.all_reduce([o[i:i + 1] / 7 for o in own])
    assert collective.own_gradients(entries, own, 21) is None
    short = Collective()  # one entry replaced by bookkeeping: not the whole gradient
    short.begin(3)
    short.all_reduce([np.concatenate([o[:20], [7.0, 1.0]]) for o in own])
    assert collective.own_gradients(short, own, 21) == 0
    assert collective.answer_from_sums(honest, sum(own)) and collective.answer_from_sums(entries, sum(own))
    assert collective.answer_from_sums(bucket, sum(own) / 36)
    shuffled = Collective()  # each rank's own values, sorted: the right traffic, a useless sum
    shuffled.begin(3)
    shuffled.all_reduce([np.sort(o) for o in own])
    assert collective.own_gradients(shuffled, own, 21) is None
    assert not collective.answer_from_sums(shuffled, sum(own))
    for junk in (np.inf, np.nan, 1e308):  # a tolerance made of junk must not match anything
        forged = Collective()
        forged.begin(3)
        forged.all_reduce([np.concatenate([[junk], np.ones(20)]) for _ in own])
        assert collective.own_gradients(forged, own, 21) == 0, junk
        assert not collective.answer_from_sums(forged, sum(own)), junk
    token = Collective()
    token.begin(3)
    token.all_reduce([sum(own), np.zeros(21), np.zeros(21)])
    assert collective.own_gradients(token, own, 21) == 0


def test_a_float32_answer_is_told_whether_its_values_are_right_at_its_precision():
    """The dtype complaint says what holds for this answer: right values in float32, or values
    wrong even at float32's precision (a sum where a mean is meant), as every other check does."""
    from backprop_traps.grader.authoring.in_process import InProcessCaller
    from backprop_traps.grader.checks.ddp_accumulation import QUESTION, probes, traps
    from backprop_traps.grader.engine.context import CheckContext
    from backprop_traps.grader.loading.reference import load_solution
    ref = load_solution(QID)
    ctx = CheckContext(QUESTION, InProcessCaller({}), ref, 0, "dtype")
    rng = np.random.default_rng(0)
    params = probes.draw_params(rng, 6, 3)
    xs, ys = probes.draw_shards(rng, [4, 4], 6, 3)
    want = ref.linear_grads(params, np.concatenate(xs), np.concatenate(ys))
    parts = traps.micro_means(ctx, params, xs, ys, 2)
    for scale, says in ((1.0, "right to float32's precision"), (2.0, "wrong even at float32's precision")):
        got = [[(scale * g).astype(np.float32) for g in want] for _ in xs]
        fail = traps.diagnose(ctx, xs, 2, got, want, parts)
        assert says in fail.feedback and "rank 0" in fail.feedback and fail.trap is None, fail.feedback


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2 ** 31), st.integers(0, 20), st.floats(-1e3, 1e3).filter(lambda c: abs(c) > 1e-3),
       st.integers(1, 21), st.booleans())
def test_a_ranks_own_gradient_is_found_in_any_layout(seed, extra, scale, pieces, tampered):
    """Generated traffic: each rank's own gradient at any scale, permuted, with up to P - 1
    bookkeeping values mixed in and cut into any number of calls, is its own (and the sums hold
    the answer); with one entry changed it is not."""
    rng = np.random.default_rng(seed)
    own = [rng.standard_normal(21) for _ in range(2)]
    sent = [np.concatenate([scale * o, rng.integers(1, 9, size=extra).astype(float)]) for o in own]
    order = rng.permutation(len(sent[0]))
    sent = [s[order] for s in sent]
    if tampered:
        sent[1][np.flatnonzero(order == int(rng.integers(21)))[0]] += 0.5
    record = Collective()
    record.begin(2)
    for cut in np.array_split(np.arange(len(sent[0])), min(pieces, len(sent[0]))):
        record.all_reduce([s[cut] for s in sent])
    assert collective.own_gradients(record, own, 21) == (1 if tampered else None)
    assert collective.answer_from_sums(record, sum(own) / 7) is not tampered


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=4), st.integers(1, 5), st.integers(0, 2 ** 31),
       st.sampled_from(["random", "scaled", "one dropped"]))
def test_any_wrong_weighting_is_told_and_named_only_in_its_trap_form(sizes, m, seed, kind):
    """Generated layouts and weightings of the micro-batches' mean gradients: a wrong answer is
    always a Fail; it names a trap only when it equals one of that trap's forms, and otherwise,
    where the weights can be fitted, shows them."""
    from backprop_traps.grader.authoring.in_process import InProcessCaller
    from backprop_traps.grader.checks.ddp_accumulation import QUESTION, probes, traps
    from backprop_traps.grader.engine.context import CheckContext
    from backprop_traps.grader.engine.question import Fail
    from backprop_traps.grader.loading.reference import load_solution
    ref = load_solution(QID)
    ctx = CheckContext(QUESTION, InProcessCaller({}), ref, seed, "generated")
    rng = np.random.default_rng(seed)
    params = probes.draw_params(rng, 6, 3)
    xs, ys = probes.draw_shards(rng, sizes, 6, 3)
    parts = traps.micro_means(ctx, params, xs, ys, m)
    right = traps.right_weights(parts, sizes)
    w = {"random": rng.random(len(parts)), "scaled": right * rng.choice([2.0, 0.5, float(len(sizes))]),
         "one dropped": right * (np.arange(len(parts)) != rng.integers(len(parts)))}[kind]
    if np.allclose(w, right):
        return
    answer = list(traps.combine(parts, w))
    got = [[np.asarray(g, dtype=np.float64) for g in answer] for _ in sizes]
    want = ref.linear_grads(params, np.concatenate(xs), np.concatenate(ys))
    fail = traps.diagnose(ctx, xs, m, got, want, parts)
    assert isinstance(fail, Fail) and fail.feedback
    flat = np.concatenate([g.ravel() for g in answer])
    if fail.trap is not None:
        forms = traps.wrong_weights(parts, sizes)[fail.trap]
        assert any(np.allclose(np.concatenate([g.ravel() for g in traps.combine(parts, f)]), flat)
                   for f in forms), (fail.trap, w)
    elif len(parts) < 21 and "with the weights" in fail.feedback:
        fitted = traps.fitted(flat, [g for *_, g in parts])
        assert traps.shown(w) in fail.feedback or traps.shown(fitted) in fail.feedback


def test_a_sum_past_float64s_range_is_inf_without_a_warning():
    """The grader's sum of 1e308 on every rank is inf, as on a GPU, and prints nothing of the
    grader's (a RuntimeWarning names its file, above the learner's report)."""
    import warnings
    service = Collective()
    service.begin(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = service.all_reduce([np.full(4, 1e308)] * 3)
        assert not collective.answer_from_sums(service, np.ones(4))
    assert np.all(np.isinf(out[0]))
