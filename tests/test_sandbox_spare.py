"""Children launched ahead of the measured calls (``Sandbox.expect_measured_calls``, up to
``spares.DEPTH`` at once): each measured call still runs in a fresh child of its own, its
peak is the same, and a spare that is never used ends with the sandbox, its processes,
cgroup and folder gone."""
import os

from backprop_traps.grader.sandbox.cleanup import _alive
from backprop_traps.grader.sandbox.process import Sandbox
from backprop_traps.grader.sandbox.spares import DEPTH as PREFETCH_DEPTH
from test_sandbox_layers import FAST, GROW, mode  # noqa: F401 (the fixture: every isolation level)

TOKENED = GROW + ("import os\nTOKEN = float(int.from_bytes(os.urandom(6), 'big'))\n"
                  "print('loaded')\n"
                  "def token(mb):\n    return TOKEN\n")


def test_each_measured_call_runs_in_a_fresh_child_launched_ahead(mode):
    with Sandbox(TOKENED, FAST) as box:
        box.expect_measured_calls(2)
        assert len(box._spares.ready) == min(2, PREFETCH_DEPTH)  # launched while the first child boots
        first = box.call("token", 1)
        big = box.call("grow", 64, measure_memory=True)
        assert len(box._spares.ready) == 1  # the second measured call's child, booting now
        small = box.call("nothing", 64, measure_memory=True)
        assert box._spares.ready == []  # two expected, two made: no third child
        after = box.call("token", 1)  # an unmeasured call goes on in the last child
        output = box.output
    assert first.ok and big.ok and small.ok and after.ok, (first.error, big.error, small.error, after.error)
    assert after.value != first.value  # the measured calls restarted the child: new load, new token
    assert output.count("loaded") == 3, output  # three children loaded; the spares' prints are kept
    if "no cgroup" in mode:
        assert big.memory["peak"] is None and small.memory["peak"] is None
        return
    assert 60 * 2 ** 20 < big.memory["peak"] < 80 * 2 ** 20, (mode, big.memory)
    assert small.memory["peak"] < 8 * 2 ** 20, (mode, small.memory)


def test_a_spare_never_used_ends_with_the_sandbox(mode):
    box = Sandbox(TOKENED, FAST)
    box.expect_measured_calls(3)
    assert box.call("grow", 8, measure_memory=True).ok
    spares = list(box._spares.ready)  # the two calls still expected: both children launched ahead
    assert len(spares) == min(2, PREFETCH_DEPTH) and all(s._proc is not None for s in spares)
    pids, folders = [s._proc.pid for s in spares], [s._tmp for s in spares]
    groups = [g for s in spares if getattr(s._meter, "group", None) for g in s._meter.group._folders()]
    box.close()
    assert box._spares.ready == [] and not any(_alive(pid) for pid in pids)
    assert not any(os.path.exists(folder) for folder in folders)
    assert not any(g.exists() for g in groups), groups


def test_a_wrong_hint_costs_nothing_but_time(mode):
    with Sandbox(TOKENED, FAST) as box:
        box.expect_measured_calls(1)
        a = box.call("grow", 8, measure_memory=True)
        b = box.call("grow", 8, measure_memory=True)  # not announced: started the usual way
    assert a.ok and b.ok, (a.error, b.error)


def test_the_measured_call_counts_questions_announce_are_what_their_solutions_make(monkeypatch):
    """The hint each question gives (``Question.expected_measured_calls``) matches what grading
    its solution does, so no child is launched for nothing on the way to full marks."""
    import pytest
    from backprop_traps.grader.checks import load_question
    from backprop_traps.grader.engine.run import grade_path
    from backprop_traps.grader.loading.questions import solution_notebooks
    from backprop_traps.grader.sandbox import cgroup
    if not cgroup.available()[0]:
        pytest.skip("no cgroup here: memory checks give no points, and over-budget paths differ")
    real_call, measured = Sandbox.call, []

    def counting(self, fn, *args, measure_memory=False, **how):
        measured.append(measure_memory)
        return real_call(self, fn, *args, measure_memory=measure_memory, **how)

    monkeypatch.setattr(Sandbox, "call", counting)
    announced = {qid: load_question(qid) for qid in solution_notebooks()}
    announced = {qid: q for qid, q in announced.items() if q.memory_paths}
    assert announced, "no question measures memory"
    for qid, question in announced.items():
        measured.clear()
        result = grade_path(solution_notebooks()[qid])
        assert result.score == result.max_score, (qid, [t.feedback for t in result.tests if not t.passed])
        assert sum(measured) == question.expected_measured_calls, (qid, sum(measured))


def test_spares_stay_depth_ahead_and_never_pass_the_count():
    from backprop_traps.grader.sandbox.spares import DEPTH, Spares

    class Child:
        closed = False

        def close(self):
            self.closed = True

    made = []
    spares = Spares(lambda: made.append(Child()) or made[-1])
    spares.expect(DEPTH + 2)
    assert len(spares.ready) == DEPTH
    taken = [spares.take() for _ in range(DEPTH + 2)]
    assert taken == made and len(made) == DEPTH + 2  # every expected call got one, no extra made
    assert spares.take() is None  # a call beyond the count starts its child the usual way
    spares.expect(DEPTH + 4)
    spares.close()
    assert spares.ready == [] and all(child.closed for child in made[DEPTH + 2:])
