"""The grader's own child for what is graded from source (grader/sandbox/source_child.py,
issue 35): none of the learner's code runs in it, it shares the submission's time budget,
gives up on a kernel that ran past its time once, and holds less memory than the learner's."""
from __future__ import annotations

from backprop_traps.grader.engine.run import grade_path
from backprop_traps.grader.sandbox.limits import Limits
from backprop_traps.grader.sandbox.process import Sandbox
from backprop_traps.grader.sandbox.source_child import MEMORY_MB, SourceChild, harness_source

SPIN = """
@cuda.jit
def maxpool2d_backward_scatter_kernel(dout, argmax, dx):
    while True:
        pass
"""


def test_none_of_the_learners_code_runs_in_the_harness_child(tmp_path):
    learner = "print('LEARNER-CODE-RAN')\nimport builtins\nbuiltins.TOUCHED = True\n"
    harness = harness_source([("probe", "def touched():\n    import builtins\n    return hasattr(builtins, 'TOUCHED')\n")],
                             "_grader_touched = _grader_modules['probe'].touched\n"
                             "def _grader_take_source(cells):\n    return [c[1] for c in cells]")
    with Sandbox(learner, Limits(call_seconds=10.0), hide=[tmp_path]) as main:
        child = SourceChild(main, harness)
        child.begin()
        assert main.start().ok and main.output.startswith("LEARNER-CODE-RAN")
        touched = child.call("_grader_touched")
        assert touched.ok and touched.value is False
        assert child.taken == [learner]  # the source arrived as text, never as code
        assert "LEARNER" not in child.box.output
        assert child.box.limits.memory_mb == min(MEMORY_MB, main.limits.memory_mb)
        assert main.spent >= touched.seconds  # one time budget for both children
        child.close()


def test_a_kernel_that_never_ends_costs_one_call_limit_and_is_not_launched_again(answer_file, monkeypatch):
    """Robust to a loaded machine (issue 51: under load this failed as a grader error, with a
    2 s call limit and a 15 s wall-clock bound): limits far above what a fair call takes, and
    "not launched again" counted, not timed."""
    path = answer_file("maxpool_kernel", text=SPIN)
    launched = []
    real_call = SourceChild.call

    def counting(self, fn, *args, key=None):
        if key is not None and key not in self.gave_up:
            launched.append(key)  # reaches the child: a real launch
        return real_call(self, fn, *args, key=key)
    monkeypatch.setattr(SourceChild, "call", counting)
    result = grade_path(path, limits=Limits(call_seconds=20.0, load_seconds=600.0, total_seconds=900.0))
    scatter = [t for t in result.tests if t.name.startswith(("scatter", "bounds", "gather and scatter"))]
    assert scatter and all(not t.passed and "did not finish within 20 s" in t.feedback for t in scatter)
    assert not any(t.grader_error for t in result.tests), [(t.name, t.feedback) for t in result.tests if t.grader_error]
    gather = next(t for t in result.tests if t.name.startswith("gather kernel"))
    assert gather.passed  # the gather still graded, in a fresh child
    assert launched.count("scatter") == 1, launched  # one time limit, then never launched again
