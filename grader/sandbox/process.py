"""The grader's side of the trust boundary: start the child, call into it, kill it.

One ``Sandbox`` holds one child for one submission, inside bubblewrap (``bwrap.py``) and
its own cgroup (``cgroup.py``) where the machine allows, else behind Landlock, seccomp and
rlimits alone; ``isolation`` says which. Calls cross as wire frames (never pickle). A call
that hangs, crashes or breaks the protocol ends the whole sandbox; the next call starts a
fresh one and loads the submission again, so one bad function costs only its own checks.
Peak memory is read here from the kernel (``measure.py``), never reported by the child.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from backprop_traps.grader import timeline
from backprop_traps.grader.sandbox import bwrap, cgroup, masks, measure
from backprop_traps.grader.sandbox.channel import CallResult, Channel, Output  # noqa: F401 (CallResult: re-exported)
from backprop_traps.grader.sandbox.cleanup import MARKER, kill_tree, reap_stale_folders
from backprop_traps.grader.sandbox.code_loading import LoadsSubmission
from backprop_traps.grader.sandbox.inert import inert
from backprop_traps.grader.sandbox.limits import Limits
from backprop_traps.grader.sandbox.lost_layers import layers_lost
from backprop_traps.grader.sandbox.visibility import (_read_only_rules, deferred_startup, hidden_paths,
                                                       startup_hooks)

WORKER = Path(__file__).with_name("worker.py")


def _tmpfs_folder() -> str | None:
    """/dev/shm where it is a writable tmpfs (pages there are charged to the writer's cgroup)."""
    try:
        with open("/proc/self/mounts") as mounts:
            if any(f.split()[1:3] == ["/dev/shm", "tmpfs"] for f in mounts):
                return "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    except OSError:
        pass
    return None


_MEMORY_BACKED = _tmpfs_folder()


class Sandbox(LoadsSubmission, Channel):
    """A child process running one submission's code under ``limits``."""

    def __init__(self, source: str, limits: Limits = Limits(), hide: list[Path] = (),
                 isolate: bool = True, helpers: str = "", services: dict | None = None,
                 cells: list | None = None, practice: bool = False):
        self.source = source
        self.practice = practice
        """A learner's own practice (no course): memory is measured by the practice meter where
        no tamper-proof one exists (``measure.create``)."""
        self.memory_meter = ""
        """How the last measured call's memory was counted (``measure.Meter.label``)."""
        self.cells = cells
        """A notebook's cells, ``(label, source, source with magics blanked)``, loaded one by one
        (``start``); None: ``source`` is one cell (a .py file)."""
        self.refused: str | None = None
        """Set when loading the code failed because of the sandbox itself (refusals.py): the
        first such sentence; the checks that then fail are the grader's error."""
        self.warnings: list[str] = []
        self._warned: set[str] = set()  # cells whose warning was counted (once across restarts)
        """Cells that raised while loading, one sentence each, kept across restarts."""
        self.helpers = helpers
        """Trusted code run in the submission's namespace right after it loads (and after
        every reload), e.g. counting helpers that replace the learner's copies."""
        self.services = dict(services or {})
        """name -> function the child may ask the grader to run (``_grader_ask`` in the
        child): the grader does the work and keeps any count, where the child cannot write."""
        self.limits = limits
        self.isolate = isolate
        self.isolation = "not started"
        self.load_error: CallResult | None = None
        self.spent = 0.0
        self._hide = list(hide)
        self._hidden: list[str] | None = None  # hidden_paths(hide), listed once (a restart masks the same)
        self._proc: subprocess.Popen | None = None
        self._tmp: str | None = None
        self._marker = ""
        self._output = Output(limits.output_kb * 1024)
        self._meter: measure.Meter | None = None
        self._measuring = False  # this child's baseline was read: measured calls may run in it
        self._memory_expected = False
        self._info_r: int | None = None  # bwrap's --info-fd (the meter reads the worker's pid)
        self._bwrap_filtered = False     # whether bwrap loaded the seccomp filter
        self._launched = None            # ``launch``'s process, before its handshake
        self.not_started: str | None = None
        """Why this sandbox could not start (the grader's or the machine's fault, never the
        learner's: the engine reports it as a grader error, not a score)."""
        self._imports_loaded = False     # this child ran the submission's imports on their own

    # -- life cycle -------------------------------------------------------------------
    def launch(self) -> None:
        """Start the child's process now, so that it boots (bubblewrap, Python, numpy) while the
        grader prepares the question; ``start`` then finishes the handshake. Optional."""
        if self._launched is None and self._proc is None:
            self._launched = self._launch()

    def launch_key(self) -> tuple:
        """What this sandbox's launch depended on (``warm.py``): two sandboxes with the same key
        start alike, so a prepared one may serve a grading that would have started its own."""
        from backprop_traps.grader.sandbox.visibility import readable_paths
        seen = readable_paths()
        masked = tuple(sorted(p for p in self._hidden_paths()
                              if any(p == r or p.startswith(r.rstrip("/") + "/") for r in seen)))
        return self.limits, self.isolate, self.practice, masked

    @property
    def fresh(self) -> bool:
        """Launched, alive, and sent nothing yet (not even its set-up message): no code of any
        submission has reached it."""
        return (self._launched is not None and self._proc is not None and self._proc.poll() is None
                and not self.source and not self.cells and not self.helpers)

    def adopt(self, source: str, cells: list | None, hide: list[Path]) -> "Sandbox":
        """Give this prepared sandbox (``warm.prepare``) the one submission it will run, whose
        sandbox masks ``hide`` (to the same effect as what it was launched with: ``launch_key``)."""
        if not self.fresh:
            raise ValueError("only a fresh prepared sandbox can take a submission")
        self.source, self.cells, self._hide = source, cells, list(hide)
        return self

    @property
    def running(self):
        """The child's process once its handshake is done (None before, and after it ended)."""
        return self._proc if self._launched is None else None

    def sibling(self, helpers: str, limits: Limits | None = None) -> "Sandbox":
        """A sandbox for the same submission with none of its code: the grader's ``helpers``
        alone, with the same hidden paths and layers, under ``limits`` (default: the same
        limits; ``source_child``)."""
        return Sandbox("", limits or self.limits, hide=self._hide, isolate=self.isolate, helpers=helpers)

    def expect_measured_calls(self, count: int) -> None:
        """A hint: about ``count`` calls will measure memory. A child not started yet is then
        started as the measuring one (``call``), so no second child is needed. Speed only."""
        self._memory_expected = count > 0  # a restart (after a crash) starts a measuring child too
        if count > 0 and (self._proc is None or self._launched is not None):
            self._measuring = True

    def _hidden_paths(self) -> list[str]:
        if self._hidden is None:
            self._hidden = hidden_paths(self._hide)
        return list(self._hidden)

    def _spawn(self) -> CallResult:
        launched = self._launched if self._launched is not None else self._launch()
        self._launched = None
        if isinstance(launched, CallResult):
            return launched
        use_bwrap, setup = launched
        started = self._exchange(setup, self.limits.call_seconds + 5, what="starting the sandbox")
        if timeline.enabled():
            self._profile_boot(started)
        return self._started(started, use_bwrap)

    def _profile_boot(self, started: CallResult) -> None:
        """The child's boot, for the profile (``timeline``): its stamps are the child's word,
        shown and never used."""
        boot = started.value.get("boot") if started.ok and isinstance(started.value, dict) else None
        timeline.mark("child handshake (waited for its boot)")
        if isinstance(boot, list) and len(boot) == 4 and all(isinstance(t, float) for t in boot):
            began, imported, ready, cpu = boot
            timeline.note("child: bwrap, cgroup join, Python start-up", began - self._popen_at)
            timeline.note("child: worker imports (numpy)", imported - began)
            timeline.note("child: limits, Landlock, handshake", ready - imported)
            timeline.note("child: CPU seconds of its boot", cpu)

    def _launch(self) -> "CallResult | tuple[bool, dict]":
        """The child's process, started; returns (whether bubblewrap wraps it, the setup
        request its worker waits for), or the error that stopped it."""
        self._marker = f"{os.getpid()}-{os.urandom(8).hex()}"  # whose sandbox, and which
        use_bwrap = self.isolate and bwrap.usable()
        try:
            self._meter = measure.create(self.limits, self.isolate, self.practice)
        except cgroup.CgroupError as e:  # never a silent fall back to fewer layers
            return self._not_started(f"the sandbox could not start: {e.strerror}")
        # Without bubblewrap, the working folder is writable only where a cgroup charges what
        # files hold: on a tmpfs (a disk would let files fill the host's disk unbounded).
        on_tmpfs = not use_bwrap and self._meter.whole_sandbox and _MEMORY_BACKED
        if on_tmpfs:
            reap_stale_folders(_MEMORY_BACKED, "bpt-sandbox-")
        self._tmp = tempfile.mkdtemp(prefix=f"bpt-sandbox-{os.getpid()}-", dir=_MEMORY_BACKED if on_tmpfs else None)
        workdir = bwrap.scratch()[1] if use_bwrap else self._tmp
        env = {"PATH": "/usr/bin:/bin", "HOME": workdir, "TMPDIR": workdir, "LANG": "C.UTF-8",
               "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1", MARKER: self._marker,
               # no GPU device inside the sandbox: learner kernels (maxpool_kernel) run in Numba's simulator
               "NUMBA_ENABLE_CUDASIM": "1"}
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        out_r, out_w = os.pipe()
        keep = [resp_w]
        deferred = []  # start-up files bubblewrap masks (visibility.deferred_startup)
        if use_bwrap:
            try:
                argv, extra_fds, deferred = self._bwrap_argv(env, resp_w)
            except masks.MaskError as e:  # this submission's paths, not the machine: no fall back
                for fd in (req_r, req_w, resp_r, resp_w, out_r, out_w):
                    os.close(fd)
                self.close()  # the meter and the temp folder made for it
                return self._not_started(f"the sandbox could not start (hiding the kit and your folder: {e})")
            keep += extra_fds
        else:
            argv = [sys.executable, "-I", "-B", str(WORKER), str(resp_w)]
        argv = self._meter.wrap(argv)
        self._popen_at = time.monotonic()
        self._proc = subprocess.Popen(
            argv, stdin=req_r, stdout=out_w, stderr=out_w, pass_fds=tuple(keep), cwd=self._tmp,
            env=env if not use_bwrap else {"PATH": "/usr/bin:/bin"}, start_new_session=True)
        for fd in [req_r, out_w] + keep:
            os.close(fd)
        self._req, self._resp = req_w, resp_r
        os.set_blocking(self._req, False)  # a child that stops reading cannot block the grader
        self._output.attach(out_r)
        threading.Thread(target=self._output.drain, args=(out_r,), daemon=True).start()
        self._meter.attach(self._proc.pid, self._info_r)
        timeline.watch_sandbox(lambda proc=self._proc: proc.pid if proc.returncode is None else None)
        timeline.mark("launch the sandbox (cgroup, seccomp, bwrap spawned)")
        if use_bwrap:
            read_only = bwrap.python_roots() + ["/usr", "/etc", "/dev/urandom", *bwrap.SYSTEM_INFO]
            read_write = [bwrap.scratch()[0], "/dev/null"]
        else:
            # without a cgroup nothing caps what files would hold: no writable folder at all
            writable = [self._tmp] if self._meter.whole_sandbox and _MEMORY_BACKED else []
            read_only, read_write = _read_only_rules(tuple(self._hidden_paths())), writable + ["/dev/null"]
        setup = {"limits": {"memory_mb": self.limits.memory_mb, "file_mb": self.limits.file_mb,
                            "open_files": self.limits.open_files,
                            "total_seconds": self.limits.total_seconds},
                 "tmpdir": workdir, "isolate": self.isolate, "read_only": read_only,
                 "read_write": read_write,
                 # without a PID namespace a detached process could outlive a grader killed
                 # by SIGKILL: no new processes at all there
                 "seccomp": None if use_bwrap or not self.isolate else {"no_fork": True},
                 # start-up files bwrap masked: the worker runs them at their module's first import
                 "deferred": [{"trigger": trigger, "code": code} for _, trigger, code in deferred]}
        return use_bwrap, setup

    def _started(self, started: CallResult, use_bwrap: bool) -> CallResult:
        """After the setup request: fall back, refuse lost layers, or take the baseline."""
        if not started.ok and use_bwrap and started.kind == "crash":
            said = self.output.strip().splitlines()
            said = inert(said[-1] if said else "bwrap said nothing", 200)
            self.close()
            if bwrap.has_worked() or bwrap.probe()[0]:
                # bwrap works on this machine (a plain sandbox starts: ``probe``): this failure is
                # this sandbox's (its paths, something another used up, ...), never a reason to
                # go on with fewer layers, for this submission or the rest of a batch
                return self._not_started(f"the sandbox could not start (bubblewrap: {said})")
            # bwrap never could make a sandbox here (e.g. user namespaces are blocked): remember
            # why, and start this and every later sandbox on the fallback layers (isolation says so)
            bwrap.mark_broken(said)
            self._output = Output(self.limits.output_kb * 1024)
            return self._spawn()
        if started.ok:
            inner = started.value.get("isolation", "none") if isinstance(started.value, dict) else "none"
            lost = layers_lost(inner)
            if lost:
                self.close()
                return self._not_started(f"the sandbox could not start: {lost}")
            if use_bwrap:
                bwrap.worked()
            outer = "bubblewrap" if use_bwrap else "no bubblewrap"
            filtered = self._bwrap_filtered if use_bwrap else inner.split(", ")[0] == "seccomp"
            if not filtered:
                self._meter.unfiltered()
            elif use_bwrap:
                outer += ", seccomp"
            self.isolation = inert(f"{outer}, {self._meter.describe()}, {inner}", 200)
            baseline = self._meter_baseline()
            if baseline is not None and not baseline.ok:
                return baseline
        return started

    def _not_started(self, why: str) -> CallResult:
        """A sandbox that could not start: said as the grader's fault (``not_started``)."""
        self.not_started = self.not_started or why
        return CallResult(False, kind="crash", error=why)

    def _bwrap_argv(self, env: dict, resp_w: int) -> tuple[list[str], list[int], list]:
        """bwrap's command line, the descriptors it must inherit (seccomp, info), and the
        start-up files it masks for the worker to run later (``deferred_startup``)."""
        from backprop_traps.grader.sandbox import seccomp
        extra = []
        bpf = seccomp.compiled(no_fork=not self._meter.caps_processes) if self.isolate else None
        self._bwrap_filtered = bpf is not None
        if bpf is not None:
            extra.append(seccomp.as_fd(bpf))
        info_r, info_w = os.pipe()
        self._info_r = info_r
        extra.append(info_w)
        tmp_mb = self.limits.tmp_mb if self._meter.whole_sandbox else 1  # (as for the fallback)
        deferred = deferred_startup()
        try:
            masked = self._hidden_paths() + [path for path, _, _ in deferred] + startup_hooks()
            args = bwrap.arguments(masked, env, tmp_mb, extra[0] if bpf is not None else None, info_w)
        except masks.MaskError:
            for fd in extra + [info_r]:
                os.close(fd)
            self._info_r = None
            raise
        worker = f"{bwrap.WORKER_DIR}/worker.py"
        return [bwrap.executable()] + args + ["--", sys.executable, "-I", "-B", worker, str(resp_w)], extra, deferred

    def close(self) -> None:
        """End the sandbox and everything it started; remove its temp dir. Never raises."""
        self._launched = None
        self._imports_loaded = False  # a restarted child loads its imports again
        if self._proc is not None:
            try:
                kill_tree(self._proc.pid, self._marker)
                if self._meter is not None:
                    self._meter.close()
                self._proc.wait(timeout=5)
            except (subprocess.TimeoutExpired, OSError):
                pass
            for fd in (self._req, self._resp, self._info_r):
                try:
                    if fd is not None:
                        os.close(fd)
                except OSError:
                    pass
            self._info_r = None
            self._proc = None
        elif self._meter is not None:
            self._meter.close()
        self._meter = None
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def output(self) -> str:
        """What the learner's code printed (capped), for feedback."""
        self._output.settle()
        text = inert(self._output.kept.decode("utf-8", "replace"), keep_newlines=True)
        if self._output.total > len(self._output.kept):
            text += f"\n... ({self._output.total - len(self._output.kept)} more bytes dropped)"
        return text

    # -- calls ------------------------------------------------------------------------
    def charge(self, seconds: float) -> None:
        """Count ``seconds`` of the grader's own work for this submission (a feedback search's
        reference calls: engine/search_budget.py) against its total time budget."""
        if seconds > 0:
            self.spent += float(seconds)

    def call(self, fn: str, *args, echo_args: bool = False, measure_memory: bool = False) -> CallResult:
        """Call the learner's ``fn(*args)`` in the child; never raises for the learner's faults.

        ``measure_memory``: ``memory`` holds the call's peak, read by the grader from the
        kernel (see ``measure.Meter``). It runs in a measuring child, whose baseline was read
        before any learner code beyond its imports ran: the first child, when
        ``expect_measured_calls`` came before it started, else a new one. Later calls,
        measured or not, go on in it, each measured one in a cgroup of its own that counts
        whatever earlier calls still hold. A call that runs out of time on a machine found
        slower since its budgets were set runs once more (speed_recheck.py)."""
        before = self.spent
        result = self._call(fn, args, echo_args, measure_memory)
        if result.kind == "timeout":
            from backprop_traps.grader.sandbox.speed_recheck import after_timeout
            result = after_timeout(self, before, result, lambda: self._call(fn, args, echo_args, measure_memory))
        return result

    def _call(self, fn: str, args: tuple, echo_args: bool, measure_memory: bool) -> CallResult:
        if self.spent >= self.limits.total_seconds:
            return CallResult(False, kind="budget", error=(
                f"not run: your code used up the total time limit of {self.limits.total_seconds:g} s"))
        if measure_memory and self._proc is not None and not self._measuring:
            self.close()  # this child has no baseline: what it holds could not be told apart
        if self._proc is None:
            if self.load_error is not None and self.load_error.kind not in ("timeout", "crash"):
                return self.load_error
            self._measuring = measure_memory or self._memory_expected  # only these pay for the baseline
            loaded = self.start()
            if not loaded.ok:
                return loaded
        budget = min(self.limits.call_seconds, self.limits.total_seconds - self.spent)
        request = {"op": "call", "fn": fn, "args": list(args), "echo_args": echo_args}
        if measure_memory:
            self._exchange({"op": "settle"}, budget, what="settling")
            self._meter.begin_call()  # from here on, whatever the call holds is counted
            request.update(self._meter.request_extras())
        result = self._exchange(request, budget, what=f"{fn}()")
        memory = (self._meter.read(request, result.value if result.ok else None)
                  if measure_memory and self._meter is not None else None)
        self.memory_meter = (memory or {}).get("meter") or self.memory_meter
        if result.ok:
            reply = result.value
            return CallResult(True, value=reply.get("value"), args_after=reply.get("args_after"),
                              memory=memory, seconds=result.seconds)
        return result

    def run_cells(self, cells: list[str]) -> CallResult:
        """Run code cells (a notebook's visible tests) in the child after the learner's code.

        ``value`` is one ``{"ok": bool, "type", "message", "line"}`` per cell. Not scored."""
        if self.spent >= self.limits.total_seconds:
            return CallResult(False, kind="budget", error="not run: the total time limit is used up")
        if self._proc is None:
            loaded = self.start()
            if not loaded.ok:
                return loaded
        budget = min(self.limits.call_seconds, self.limits.total_seconds - self.spent)
        result = self._exchange({"op": "run_cells", "cells": list(cells)}, budget, what="the visible tests")
        if result.ok:
            return CallResult(True, value=result.value.get("value"), seconds=result.seconds)
        return result
