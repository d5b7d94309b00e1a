"""The local runner: ``-j`` grading processes, each driven by one thread.

Each slot sends a submission's spec to its grading process (``backprop_traps.grader.batch.worker``) and
waits for the record, at most ``watchdog`` seconds. The sandbox already bounds what a
submission can do; the watchdog is the backstop for a grader that hangs anyway. A slot
whose process hangs or dies records that submission as failed (its error says why),
stops the process with everything it started, and goes on with a fresh one. Results are
written by the slot the moment they exist, so a killed batch loses only what was in flight.

Why processes and not threads calling ``grade_path``: the grader's own side of a
submission (building the sandbox's file rules, finite differences of the reference) is
Python holding the interpreter lock, so threads in one process do not scale.
"""
from __future__ import annotations

import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import backprop_traps
from backprop_traps.grader.batch.grading import failed_record
from backprop_traps.grader.batch.plan import Batch, Pending
from backprop_traps.grader.batch.variants import SECRET_ENV
from backprop_traps.grader.batch.worker import RUNNER_PID, TAMPERED
from backprop_traps.grader.sandbox.cleanup import MARKER as _MARKER
from backprop_traps.grader.sandbox.cleanup import kill_tree

PACKAGE_ROOT = Path(backprop_traps.__file__).resolve().parents[1]
"""The folder holding the ``backprop_traps`` this runner runs: site-packages, or the clone of an
editable install. The workers get it first on their path, so they grade with the same kit."""


class _Tampered(Exception):
    """The grading process stopped because it was changed from outside."""


class WorkerFailed(RuntimeError):
    """The grading process hung or died on a submission; the message is for the gradebook."""


def watchdog_seconds(limits) -> float:
    """How long one submission may take in all, grader included, before its process is stopped:
    its calls' budget, plus room for a fresh sandbox after each crash (one per check)."""
    return 2 * limits.total_seconds + 4 * limits.call_seconds + 30


class GradingProcess:
    """One ``python -m backprop_traps.grader.batch.worker``, started on first use and after a failure."""

    def __init__(self, log=None):
        self.log = log
        self.proc: subprocess.Popen | None = None
        self._buffer = b""

    def _start(self) -> None:
        env = {k: v for k, v in os.environ.items() if k != SECRET_ENV}  # workers get seeds only
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), env.get("PYTHONPATH")) if p)
        env[RUNNER_PID] = str(os.getpid())
        # -P and a neutral folder: the course folder is neither the cwd nor on sys.path
        self.proc = subprocess.Popen([sys.executable, "-P", "-m", "backprop_traps.grader.batch.worker"], bufsize=0,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log or subprocess.DEVNULL, env=env, cwd="/",
                                     start_new_session=True)  # Ctrl-C reaches the runner only
        self._buffer = b""

    def grade(self, spec: dict, timeout: float) -> dict:
        """The record for ``spec``; raises WorkerFailed if the process hangs or dies. A
        process changed from outside (``TAMPERED``) is replaced and the spec sent again."""
        for _ in range(3):
            try:
                return self._grade_once(spec, timeout)
            except _Tampered:
                continue
        raise WorkerFailed("the grading process kept being changed from outside; run the batch "
                           "again to retry this file (see README, security)")

    def _grade_once(self, spec: dict, timeout: float) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.stop()
            self._start()
        deadline = time.monotonic() + timeout
        try:
            self.proc.stdin.write((json.dumps(spec) + "\n").encode())
            line = self._read_line(deadline)
            record = json.loads(line)
            if not isinstance(record, dict) or not isinstance(record.get("result"), dict):
                raise ValueError("not a record")
            return record
        except TimeoutError:
            self.stop()
            raise WorkerFailed(f"grading did not finish within {timeout:g} s; the grading "
                               "process was stopped (see README, security)") from None
        except (EOFError, OSError, ValueError):
            if self.proc.poll() == TAMPERED or self._exit_code() == TAMPERED:
                self.stop()
                raise _Tampered from None
            code = self._exit_status()
            self.stop()
            raise WorkerFailed(f"the grading process died while grading this file ({code}); "
                               "run the batch again to retry it") from None

    def _read_line(self, deadline: float) -> bytes:
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise EOFError
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _exit_code(self):
        try:
            return self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return None

    def _exit_status(self) -> str:
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return "it stopped answering"
        if code < 0:
            return f"killed by {signal.Signals(-code).name}" if -code in signal.valid_signals() else f"signal {-code}"
        return f"exit status {code}"

    def stop(self) -> None:
        """SIGTERM first (the process's sandbox kills the submission's processes as it
        unwinds), then SIGKILL, then whatever sandbox processes it still had."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                left = sandbox_children(proc.pid)
                proc.kill()
                proc.wait()
                for pid, marker in left:
                    kill_tree(pid, marker)
        for pipe in (proc.stdin, proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass


def sandbox_children(pid: int) -> list[tuple[int, str]]:
    """The sandbox processes ``pid`` started: (pid, marker) for ``kill_tree``."""
    found = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            if ppid != pid:
                continue
            with open(f"/proc/{entry}/environ", "rb") as f:
                for var in f.read().split(b"\0"):
                    if var.startswith(f"{_MARKER}=".encode()):
                        found.append((int(entry), var.split(b"=", 1)[1].decode()))
        except (OSError, ValueError, IndexError):
            continue
    return found


class LocalRunner:
    """Grades ``todo`` with ``workers`` grading processes; see the module's docstring."""

    def __init__(self, batch: Batch, workers: int, watchdog: float | None = None, log=None):
        self.batch = batch
        self.workers = max(1, workers)
        self.watchdog = watchdog or watchdog_seconds(batch.limits)
        self.log = log
        self.stopping = threading.Event()
        self.failure: BaseException | None = None
        self._queue: queue.Queue[Pending] = queue.Queue()
        self._done: queue.Queue[Pending] = queue.Queue()
        self._processes: list[GradingProcess] = []

    def run(self, todo: list[Pending], on_result=lambda item: None) -> int:
        """Grade every pending submission; ``on_result`` is called (in this thread) after
        each is recorded. Returns how many were recorded. Ctrl-C stops cleanly."""
        for item in todo:
            self._queue.put(item)
        slots = [threading.Thread(target=self._slot, daemon=True, name=f"grade-slot-{i}")
                 for i in range(min(self.workers, len(todo)))]
        for slot in slots:
            slot.start()
        recorded = 0
        try:
            while recorded < len(todo):
                try:
                    item = self._done.get(timeout=0.2)
                except queue.Empty:
                    if not any(slot.is_alive() for slot in slots):
                        break  # every slot stopped early: self.failure says why
                    continue
                recorded += 1
                on_result(item)
        except BaseException:
            self.stop()
            raise
        for slot in slots:
            slot.join()
        from backprop_traps.grader import timeline
        timeline.mark("the batch's runner")  # its own CPU, in the profile (benchmarks/batch_throughput.py)
        return recorded

    def stop(self) -> None:
        """Stop grading: in-flight submissions are not recorded (a rerun grades them)."""
        self.stopping.set()
        for process in list(self._processes):
            process.stop()

    def _slot(self) -> None:
        process = GradingProcess(self.log)
        self._processes.append(process)
        try:
            while not self.stopping.is_set():
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    return
                spec = self.batch.spec(item)
                # more to grade after this one: its grading process starts the next sandbox
                # while grading this (grader/sandbox/warm.py); the last one wastes no boot
                spec["keep_warm"] = not self._queue.empty()
                try:
                    record = process.grade(spec, self.watchdog)
                except WorkerFailed as exc:
                    record = failed_record(spec, str(exc), seconds=self.watchdog)
                except Exception as exc:  # noqa: BLE001 -- a bug of ours: record it, go on
                    record = failed_record(spec, f"internal batch error ({type(exc).__name__}: {exc})")
                if self.stopping.is_set():
                    return
                try:
                    self.batch.record(item, record)
                except OSError as exc:  # disk full, OUTDIR gone: no point grading on
                    self.failure = exc
                    self.stopping.set()
                    return
                self._done.put(item)
        finally:
            process.stop()
