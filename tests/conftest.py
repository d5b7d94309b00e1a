"""Test-wide set-up.

Kernel tests run under the Numba CUDA simulator unless BACKPROP_TRAPS_REAL_GPU=1 is set
(then the same tests run on the real device). The simulator must be chosen before
numba.cuda is first imported, so it is set here, at collection time.
"""
import os

import backprop_traps.grader  # noqa: F401  (before numpy loads: one BLAS thread for the checks run here, see grader/__init__.py)

# Run as <venv>/bin/python -m pytest without activating the venv (IDEs, CI), PATH holds none of
# its tools, yet nbgrader starts `alembic` by name and tests start `grade` and `jupyter`: this
# Python's scripts go first on PATH, as activating the venv would (grader/batch/own_scripts.py).
from backprop_traps.grader.batch.own_scripts import put_own_scripts_first  # noqa: E402

put_own_scripts_first()

REAL_GPU = os.environ.get("BACKPROP_TRAPS_REAL_GPU") == "1"
if not REAL_GPU:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    # Where the kernels get `cuda`: under the simulator it installs the shared-array lock
    # (kernels/runtime/simulator_fixes.py) and the launch-limit check (kernels/runtime/launch_limits.py), so a
    # launch a GPU would refuse fails here too, and sets the interpreter's switch interval the
    # simulated threads run fastest at. Before the race checker wraps the same class.
    import backprop_traps.kernels.runtime.device  # noqa: E402,F401

import tempfile  # noqa: E402

# The time budgets of practice scale to the machine's measured speed (grader/sandbox/machine_speed.py);
# the suite keeps them as written, however busy the machine (its subprocesses inherit this).
os.environ.setdefault("BACKPROP_TRAPS_SLOWDOWN", "1")

from pathlib import Path  # noqa: E402

# the practice cache (grader/engine/practice_cache.py) of this test run, never the user's own
os.environ.setdefault("BACKPROP_TRAPS_CACHE", tempfile.mkdtemp(prefix="bpt-test-cache-"))

import pytest  # noqa: E402

TESTS = Path(__file__).parent
REPO = TESTS.parent
ANSWERS = TESTS / "answers"


def solution_source(question: str) -> str:
    """The graded code of a question's solution notebook, as a learner's .py would hold it."""
    from backprop_traps.grader.loading.notebook import graded_code, parse_notebook
    from backprop_traps.grader.loading.questions import solution_path
    return graded_code(parse_notebook(solution_path(question).read_text(encoding="utf-8")))


def graded_in_process(question: str, snippet: str, base: bool = True, seed: int = 1234, after: str = ""):
    """Grade the solution's code plus ``snippet`` (or ``snippet`` alone), then ``after``, in
    this process (trusted test code): the tests and their score, as ``grade`` would give them."""
    from types import SimpleNamespace
    from backprop_traps.grader.authoring.in_process import InProcessCaller, namespace_from_source, run_checks
    from backprop_traps.grader.checks import load_question
    from backprop_traps.grader.loading.reference import load_solution
    source = (solution_source(question) + "\n\n" if base else "") + snippet + (f"\n\n{after}" if after else "")
    tests = run_checks(load_question(question), InProcessCaller(namespace_from_source(source)),
                       load_solution(question), seed)
    return SimpleNamespace(tests=tests, score=sum(t.points for t in tests),
                           max_score=sum(t.max_points for t in tests))


@pytest.fixture
def answer_file(tmp_path):
    """Build a submission: the solution's code, then a snippet that overrides some of it.

    ``answer_file("routing_trap", "lost_overlap")`` reads ``tests/answers/routing_trap/lost_overlap.py``;
    ``answer_file("routing_trap", text="def f(): ...")`` takes the snippet inline;
    ``base=False`` leaves the solution out (a complete answer of its own).
    """
    def build(question: str, name: str | None = None, text: str | None = None, base: bool = True) -> Path:
        snippet = text if text is not None else (ANSWERS / question / f"{name}.py").read_text()
        path = tmp_path / f"{name or 'answer'}.py"
        body = (solution_source(question) if base else "") + "\n\n# --- the answer under test ---\n" + snippet
        path.write_text(f"# question: {question}\n" + body)
        return path
    return build


# -- Which worker runs what, and in which order (pytest-xdist, `--dist loadgroup` in pyproject.toml) --
# Modules that run on one worker: those whose module-scoped fixtures are expensive (a wheel
# and its venv, an nbgrader course, a graded class), built once so; and the host-wide
# red-team attacks, which hold what every process of the user shares (file locks, signals)
# and must not overlap their own checks.
ONE_WORKER = {"test_packaging.py", "test_nbgrader_course.py", "test_batch.py",
              "test_batch_instructor.py", "test_bench_smoke.py", "test_vram_trap_kernels.py",
              "test_kernels_static.py", "test_redteam_host.py"}
# The longest units, longest first (measured on 2 cores: benchmarks/results/test_suite.md).
# They start the run, so no worker is left with one of them at the end while the other
# idles; every other test keeps collection order behind them. A module name is that
# module's unit; anything else is the start of test ids.
LONGEST_FIRST = [
    "test_nbgrader_course.py",
    "test_packaging.py",
    "tests/questions/test_attention_backward.py::test_attention_backward_is_sound",
    "test_redteam_host.py",
    "test_bench_smoke.py",
    "test_kernels_static.py",  # 37 s to compile on a cold cache (~/.cache/backprop-traps), else none
    "test_gpu_session_archive.py",  # 100 s on 2 cores: a git archive's collection, then a --simulate run
    "tests/kernels/test_per_step_update_trap_kernels.py::test_tiles_with_edges",
    "tests/kernels/test_residual_backward_kernels.py::test_gradient_norms_match_the_reference_and_run_in_a_fixed_order",
    "tests/questions/test_grad_accumulation.py::test_grad_accumulation_is_sound",
    "test_vram_trap_kernels.py",
    "tests/redteam/test_redteam.py::test_nothing_outlives_a_killed_grader",
    "tests/batch/test_batch_hostile.py::test_hostile_suite_through_grade_batch",
    "tests/authoring/test_new_and_validate.py::test_every_shipped_question_with_checks_is_sound[vram_trap]",
    "tests/authoring/test_new_and_validate.py::test_validate_names_each_planted_fault",
]


def _unit(nodeid: str) -> str:
    """The unit of work a test belongs to: its module if the module runs on one worker."""
    module = nodeid.split("::", 1)[0]
    return module if module.rsplit("/", 1)[-1] in ONE_WORKER else nodeid


def _rank(nodeid: str) -> int:
    unit = _unit(nodeid)
    for rank, name in enumerate(LONGEST_FIRST):
        if unit.endswith("/" + name) or nodeid.startswith(name):
            return rank
    return len(LONGEST_FIRST)


# -- The simulator's kernel tests: their own run (issue 51) --------------------------------------
# tests/kernels runs every kernel under the Numba CUDA simulator (each CUDA thread a Python
# thread): a large share of the suite's time. They carry the `kernels` mark. The README's
# `python -m pytest` (no path, no -m) leaves them out; `python -m pytest -m kernels` runs them,
# and a path (`python -m pytest tests`, `tests/kernels/test_x.py`) or any -m runs what it names.
# CI (.ci/run) runs both.
KERNEL_TESTS = "tests/kernels/"
BROWSER_TESTS = "tests/browser/"  # a real JupyterLab in Chromium: `python -m pytest -m browser tests/browser -n 0`


def leaves_out_kernels(config) -> bool:
    """True for the README's plain run: no test path given and no -m expression."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller decided
        return bool(config.workerinput.get("leave_out_kernels"))
    return not config.option.markexpr and config.args_source == pytest.Config.ArgsSource.TESTPATHS


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    node.workerinput["leave_out_kernels"] = leaves_out_kernels(node.config)


def start_heartbeat(config):
    """The progress line once a minute (tests/heartbeat.py), in the xdist controller, which
    runs no test itself. In one process (-n 0) pytest names each file as it starts it, and
    what the line wrote would land in the running test's captured output (unless -s)."""
    controller = config.pluginmanager.has_plugin("dsession") or config.option.capture == "no"
    if controller and not hasattr(config, "workerinput") and not config.option.collectonly:
        from heartbeat import Heartbeat
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            beat = Heartbeat(reporter.write_line)
            config.pluginmanager.register(beat, "heartbeat")
            beat.start()


def pytest_report_header(config):
    if leaves_out_kernels(config):
        return ["the simulator's kernel tests (tests/kernels) run apart: `python -m pytest -m kernels`; "
                "the browser test too: `python -m pytest -m browser tests/browser -n 0`"]
    return []


@pytest.hookimpl(tryfirst=True)  # the mark before pytest's own -m selection reads it
def pytest_collection_modifyitems(config, items):
    kept, left_out = [], []
    leave_out = config is not None and leaves_out_kernels(config)
    for item in items:
        if item.nodeid.startswith(KERNEL_TESTS):
            if hasattr(item, "add_marker"):
                item.add_marker(pytest.mark.kernels)
            if leave_out:
                left_out.append(item)
                continue
        if leave_out and item.nodeid.startswith(BROWSER_TESTS):  # minutes, and a browser: by name only
            left_out.append(item)
            continue
        kept.append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept
    items.sort(key=lambda item: _rank(item.nodeid))  # stable: collection order within a rank


@pytest.hookimpl(optionalhook=True)  # xdist's hook: without xdist there is nothing to schedule
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup` with the units above, sent to the workers in collection order.

    xdist's own loadgroup reads `xdist_group` marks through a suffix it writes into each test
    id, which pytest 9.2's structured ids ignore (pytest-xdist issue 1386): every test would
    be a unit of its own, the wheel's venv and each nbgrader course built on both workers and
    the host-wide attacks run beside each other. So the units are decided here, from the ids
    the controller sees."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class OneWorkerModules(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid)

    # xdist would put units of many tests first; the collection order above is longest first
    config.option.loadscopereorder = False
    return OneWorkerModules(config, log)


# -- the race and barrier checker (grader/sandbox/race_checker.py) over every kernel test ----------
# Each test under tests/kernels runs inside ``race_checker.checking()``: every simulated launch
# logs each thread's global and shared accesses, and a test whose kernels race, diverge at a
# barrier, read shared memory before it is written or index below zero fails at teardown with
# what was found. A test that plants such a bug on purpose marks itself ``races_expected`` and
# reads the flags from the ``race_log`` fixture. Off on a real GPU (BACKPROP_TRAPS_REAL_GPU=1),
# and with BACKPROP_TRAPS_NO_RACE_CHECK=1 (to time the tests without it). It lives here, not in
# tests/kernels/conftest.py: a second conftest module would shadow this one for the test
# modules' `from conftest import ...`.
RACE_CHECKING = not REAL_GPU and os.environ.get("BACKPROP_TRAPS_NO_RACE_CHECK") != "1"
if RACE_CHECKING:
    from backprop_traps.grader.sandbox import race_checker  # imports numpy only; install() patches the simulator
    race_checker.install()


@pytest.hookimpl(trylast=True)  # after the terminal reporter is there
def pytest_configure(config):
    config.addinivalue_line("markers", "races_expected: the test plants a race or barrier bug on purpose")
    start_heartbeat(config)


@pytest.fixture(autouse=True)
def race_log(request):
    """The checker's Log for a kernel test (None elsewhere, and on a real GPU)."""
    if not RACE_CHECKING or request.node.path.parent.name != "kernels":
        yield None
        return
    with race_checker.checking() as log:
        yield log
    if log.flags and request.node.get_closest_marker("races_expected") is None:
        pytest.fail("the race checker flagged this test's kernels:\n"
                    + "\n".join(f"  [{f['kind']}] {f['message']}" for f in log.flags[:10]), pytrace=False)
