"""The suite's progress line (tests/heartbeat.py, issue 51) and which run leaves the simulator's
kernel tests out (tests/conftest.py): a slow suite must be told apart from a hung one, and the
README's plain command must not wait on tests/kernels."""
from types import SimpleNamespace

import pytest

import conftest
from heartbeat import Heartbeat


def test_the_line_says_how_long_how_many_and_what_runs_longest():
    now = [0.0]
    written = []
    beat = Heartbeat(written.append, monotonic=lambda: now[0])
    assert beat.line() is None  # nothing started: nothing to say
    beat.total = 10
    for i, nodeid in enumerate(["tests/a.py::t1", "tests/b.py::t2", "tests/c.py::t3", "tests/d.py::t4"]):
        now[0] = 5.0 * i
        beat.pytest_runtest_logstart(nodeid=nodeid, location=None)
    now[0] = 30.0
    beat.pytest_runtest_logfinish(nodeid="tests/a.py::t1", location=None)
    now[0] = 185.0
    line = beat.line()
    assert line.startswith("[3 min 05 s] 1 of 10 tests done; running longest: tests/b.py::t2 (3 min 00 s)")
    assert "tests/d.py::t4 (2 min 50 s)" in line and line.count("(") == 3  # the three longest
    beat.pytest_runtest_logfinish(nodeid="unknown", location=None)
    assert beat.done == 1
    for nodeid in ("tests/b.py::t2", "tests/c.py::t3", "tests/d.py::t4"):
        beat.pytest_runtest_logfinish(nodeid=nodeid, location=None)
    assert beat.line() is None  # nothing runs: nothing to say


def test_the_thread_writes_while_nothing_finishes_and_stops_with_the_run():
    written = []
    beat = Heartbeat(written.append, every_s=0.01)
    beat.pytest_runtest_logstart(nodeid="tests/hangs.py::t", location=None)
    beat.start()
    deadline = __import__("time").monotonic() + 60
    while not written and __import__("time").monotonic() < deadline:
        beat.stopped.wait(0.01)
    beat.pytest_unconfigure(None)
    assert written and "tests/hangs.py::t" in written[0]


def _config(markexpr="", source=pytest.Config.ArgsSource.TESTPATHS, worker=None):
    config = SimpleNamespace(option=SimpleNamespace(markexpr=markexpr), args_source=source)
    if worker is not None:
        config.workerinput = {"leave_out_kernels": worker}
    return config


@pytest.mark.parametrize("config, left_out", [
    (_config(), True),                                            # README command 2: python -m pytest
    (_config(markexpr="kernels"), False),                          # python -m pytest -m kernels
    (_config(markexpr="not packaging"), False),                    # any -m says itself what runs
    (_config(source=pytest.Config.ArgsSource.ARGS), False),        # python -m pytest tests/kernels/...
    (_config(worker=True), True), (_config(worker=False), False),  # an xdist worker follows its controller
])
def test_only_the_plain_run_leaves_the_kernel_tests_out(config, left_out):
    assert conftest.leaves_out_kernels(config) is left_out


def test_the_kernel_tests_carry_the_mark_and_the_plain_run_deselects_them():
    items = [SimpleNamespace(nodeid=n, marks=[]) for n in ("tests/kernels/test_a.py::t", "tests/test_b.py::t")]
    for item in items:
        item.add_marker = item.marks.append
    deselected = []
    config = _config()
    config.hook = SimpleNamespace(pytest_deselected=lambda items: deselected.extend(items))
    conftest.pytest_collection_modifyitems(config, items)
    assert [i.nodeid for i in items] == ["tests/test_b.py::t"]
    assert [i.nodeid for i in deselected] == ["tests/kernels/test_a.py::t"]
    assert deselected[0].marks[0].name == "kernels"


def test_ci_runs_the_kernel_tests_and_then_the_readmes_command():
    ci = (conftest.REPO / ".ci" / "run").read_text()
    readme = (conftest.REPO / "README.md").read_text()
    assert "pip install -e '.[test]' && python -m pytest " in readme
    kernels, plain = ci.index("python3 -m pytest -q -m kernels"), ci.rindex("python3 -m pytest -q\n")
    assert kernels < plain and 'exit "$kernels"' in ci[plain:]  # the README's command last, both count
    assert "python -m pytest -m kernels" in readme
