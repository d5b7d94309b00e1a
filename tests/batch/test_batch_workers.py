"""The local runner when grading itself breaks down: a grading process that hangs or dies
costs its submission a recorded error (never a missing row), and the batch goes on."""
import os
import signal
import threading
import time

from backprop_traps.grader.batch.layouts import find_jobs
from backprop_traps.grader.batch.plan import Batch
from backprop_traps.grader.batch.runner import LocalRunner
from backprop_traps.grader.batch.store import BROKE_WORKER, GRADED, ResultStore
from backprop_traps.grader.loading.questions import solution_notebooks
from backprop_traps.grader.sandbox.limits import Limits
from test_batch_hostile import hostile_leftovers

# Names itself so the test can tell whether it outlived its grading (see test_batch_hostile).
NAMED = "import ctypes\nctypes.CDLL(None).prctl(15, b'bpt-hostile', 0, 0, 0)\n"
STUB = "def maxpool2d_forward(x, kernel_size, stride):\n    raise NotImplementedError\n"


def make_batch(tmp_path, files: dict, limits: Limits) -> Batch:
    for rel, body in files.items():
        path = tmp_path / "class" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# question: routing_trap\n" + body)
    jobs = find_jobs(tmp_path / "class", list(solution_notebooks()))
    return Batch(jobs, ResultStore(tmp_path / "out"), limits)


def recorded(batch: Batch) -> dict:
    return {job.student: batch.store.load(job) for job in batch.jobs}


def test_a_grader_that_hangs_is_stopped_by_the_watchdog(tmp_path):
    """The sandbox would wait 30 s for this load; the watchdog gives the whole grading 2 s,
    stops the grading process, and its sandbox's processes go with it."""
    batch = make_batch(tmp_path, {"hangs/a.py": NAMED + "while True:\n    pass\n", "next/a.py": STUB},
                       Limits(call_seconds=30, total_seconds=60))
    start = time.monotonic()
    assert LocalRunner(batch, 1, watchdog=2).run(batch.pending()) == 2
    assert time.monotonic() - start < 20
    results = recorded(batch)
    hung, meta = results["hangs"]
    assert "did not finish within 2 s" in hung["error"] and hung["max_score"] == 12.0
    assert meta["status"] == BROKE_WORKER
    assert results["next"][0]["error"] is None and results["next"][1]["status"] == GRADED
    assert hostile_leftovers() == []


def test_a_grading_process_that_dies_costs_one_result_not_the_batch(tmp_path):
    """SIGKILL the grading process mid-submission: that submission gets an error result
    (retried by the next run), the others are graded by a fresh process."""
    sleeper = NAMED + "import time\n\ndef maxpool2d_forward(x, kernel_size, stride):\n    time.sleep(3)\n"
    batch = make_batch(tmp_path, {"a-sleeper/a.py": sleeper, "b/a.py": STUB, "c/a.py": STUB},
                       Limits(call_seconds=10, total_seconds=20))
    runner = LocalRunner(batch, 1)

    def kill_the_grader():
        time.sleep(1.5)  # the sleeper, graded first, is in its first call by now
        os.kill(runner._processes[0].proc.pid, signal.SIGKILL)

    threading.Thread(target=kill_the_grader, daemon=True).start()
    assert runner.run(batch.pending()) == 3
    results = recorded(batch)
    died, meta = results["a-sleeper"]
    assert "grading process died" in died["error"] and "SIGKILL" in died["error"]
    assert meta["status"] == BROKE_WORKER
    assert all(results[s][0]["error"] is None for s in ("b", "c"))
    assert [p.job.student for p in batch.pending()] == ["a-sleeper"]  # retried next time
    assert hostile_leftovers() == []
