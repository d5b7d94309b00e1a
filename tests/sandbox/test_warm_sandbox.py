"""A sandbox started before its submission (issue 47, item 2: grader/sandbox/warm.py) is a
fresh sandbox started earlier, never a shared or reused one: it has received nothing before it
is handed out, it is handed to one grading only and only to one it was launched for, a
submission finds nothing of the one graded before it, and none is left running."""
import os
import subprocess
import sys
import textwrap
import time

import pytest

from backprop_traps.grader.engine.run import grade_path
from backprop_traps.grader.sandbox import warm
from backprop_traps.grader.sandbox.limits import Limits
from backprop_traps.grader.sandbox.process import Sandbox
from conftest import solution_source

LIMITS = Limits(call_seconds=20, total_seconds=60)

# What a submission could leave behind for the next one, looked for at load, before marking.
# The probe proves itself: it must see its own marks, else loading fails (score 0).
PROBE = textwrap.dedent('''
    import builtins, os, tempfile, numpy
    def _look():
        seen = [p for p in ("/tmp/bpt-leak", os.path.join(os.getcwd(), "bpt-leak"),
                            os.path.join(tempfile.gettempdir(), "bpt-leak")) if os.path.exists(p)]
        seen += ["environ"] * bool(os.environ.get("BPT_LEAK"))
        seen += ["numpy"] * hasattr(numpy, "bpt_leak") + ["builtins"] * hasattr(builtins, "bpt_leak")
        return seen
    _left_before = _look()
    for _p in ("/tmp/bpt-leak", "bpt-leak", os.path.join(tempfile.gettempdir(), "bpt-leak")):
        try:
            open(_p, "w").write("x")
        except OSError:
            pass
    os.environ["BPT_LEAK"] = "1"; numpy.bpt_leak = 1; builtins.bpt_leak = 1
    assert _look(), "the probe cannot see its own marks"
''')
AFTER = textwrap.dedent('''
    if _left_before:  # something of an earlier submission was here: every check fails
        def maxpool2d_forward(x, kernel_size, stride):
            raise RuntimeError(f"left behind: {_left_before}")
''')


@pytest.fixture(autouse=True)
def nothing_waiting():
    warm.close()
    yield
    warm.close()


def probe_file(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text("# question: routing_trap\n" + PROBE + solution_source("routing_trap") + AFTER)
    return path


def test_a_prepared_sandbox_has_received_nothing_and_serves_once(tmp_path):
    warm.prepare(LIMITS, [tmp_path], practice=False)
    box = warm._waiting[0]
    assert box.fresh and box._launched is not None  # started, its set-up message not even sent
    assert warm.take(LIMITS, [tmp_path], practice=False) is box
    assert warm.take(LIMITS, [tmp_path], practice=False) is None  # never handed out twice
    box.adopt("x = 1\n", None, [tmp_path])
    assert not box.fresh  # it now belongs to a submission
    with pytest.raises(ValueError):
        box.adopt("y = 2\n", None, [tmp_path])
    with box:
        assert box.start().ok
        with pytest.raises(ValueError):
            box.adopt("y = 2\n", None, [tmp_path])


def test_a_sandbox_launched_for_other_limits_or_a_course_is_closed_not_used(tmp_path):
    for other in ({"limits": Limits(memory_mb=1024)}, {"practice": True}):
        warm.prepare(LIMITS, [tmp_path], practice=False)
        box = warm._waiting[0]
        asked = {"limits": LIMITS, "practice": False, **other}
        assert warm.take(asked["limits"], [tmp_path], asked["practice"]) is None
        assert box._proc is None and not box.fresh  # closed, its processes ended


def test_a_started_sandbox_is_never_adopted():
    with Sandbox("x = 1\n", LIMITS) as box:
        assert box.start().ok
        with pytest.raises(ValueError):
            box.adopt("y = 2\n", None, [])


def test_gradings_one_after_another_find_nothing_of_each_other(tmp_path, monkeypatch):
    """The batch's way (keep_warm): each grading runs in the sandbox prepared during the one
    before; the probe looks in every place a submission can write and marks them all."""
    taken = []
    real_take = warm.take
    monkeypatch.setattr(warm, "take", lambda *a: taken.append(real_take(*a)) or taken[-1])
    path = probe_file(tmp_path)
    results = [grade_path(path, limits=LIMITS, practice=False, keep_warm=True) for _ in range(3)]
    for result in results:
        assert result.error is None and not result.warnings, (result.error, result.warnings)
        assert result.score == result.max_score, [t.feedback for t in result.tests if not t.passed]
    assert taken[0] is None and all(box is not None for box in taken[1:])  # the warm ones served
    assert len({id(box) for box in taken[1:]}) == 2  # a new sandbox each time


def test_the_probe_does_see_what_one_sandbox_keeps(tmp_path):
    """Control: the same probe loaded twice into one sandbox finds its own marks."""
    source = PROBE + PROBE.replace("_left_before", "_left_second") + "\ndef seen_now():\n    return _left_second\n"
    with Sandbox(source, LIMITS) as box:
        assert box.start().ok
        assert box.call("seen_now").value


def test_no_prepared_sandbox_outlives_its_process(tmp_path):
    code = ("from backprop_traps.grader.sandbox import warm; from backprop_traps.grader.sandbox.limits "
            "import Limits; warm.prepare(Limits(), [], False); box = warm._waiting[0]; print(box._proc.pid)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    pid = int(done.stdout.split()[-1])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.1)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False
