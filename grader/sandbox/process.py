"""The grader's side of the trust boundary: start the child, call into it, kill it.

One ``Sandbox`` holds one child for one submission. Calls cross as wire frames (never
pickle). A call that hangs, crashes or breaks the protocol ends the child (its whole
process group and session, and anything else carrying its marker); the next call starts
a fresh one and loads the submission again, so one bad function costs only its own checks.
"""
from __future__ import annotations

import functools
import os
import secrets
import select
import shutil
import signal
import site
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader.sandbox import wire
from grader.sandbox.limits import Limits

WORKER = Path(__file__).with_name("worker.py")
KIT_ROOT = Path(__file__).resolve().parents[2]
KIT_NAMES = ("grader", "kernels", "solutions", "exercises")
_MARKER = "BACKPROP_TRAPS_SANDBOX"


@dataclass
class CallResult:
    """What one call into the learner's code gave."""
    ok: bool
    value: object = None
    kind: str = ""
    """On failure: timeout, crash, exception, not_implemented, missing, bad_return, budget."""
    error: str = ""
    """On failure, one sentence for the learner."""
    args_after: list | None = None
    memory: dict | None = None
    seconds: float = 0.0


@dataclass
class _Output:
    """Drains the child's stdout/stderr so a flood can neither block nor fill memory."""
    limit: int
    kept: bytearray = field(default_factory=bytearray)
    total: int = 0

    def drain(self, fd: int) -> None:
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            self.total += len(chunk)
            room = self.limit - len(self.kept)
            if room > 0:
                self.kept += chunk[:room]
        os.close(fd)


def hidden_paths(extra: list[Path]) -> list[str]:
    """What the child must not read: the kit's folders wherever they are installed, plus
    ``extra`` (an instructor's own questions folder, the submission's folder)."""
    hidden = [str(KIT_ROOT)] + [str(p) for p in extra]
    for folder in site.getsitepackages() + [site.getusersitepackages()]:
        base = Path(folder)
        if not base.is_dir():
            continue
        for entry in base.iterdir():
            name = entry.name.lower()
            if entry.name in KIT_NAMES or "backprop_traps" in name or "backprop-traps" in name:
                hidden.append(str(entry))
    return hidden


def readable_paths() -> list[str]:
    """What learner code legitimately reads: Python, its packages, system libraries."""
    paths = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths.update(p for p in sys.path if p and Path(p).is_dir())
    paths.update([sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))])
    paths.update(["/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/local/lib", "/etc/ld.so.cache",
                  "/etc/localtime", "/usr/share/zoneinfo", "/proc/cpuinfo", "/proc/meminfo",
                  "/sys/devices/system/cpu",
                  "/dev/urandom"])
    return sorted(paths)


@functools.lru_cache(maxsize=32)
def _read_only_rules(hidden: tuple[str, ...]) -> list[str]:
    """The read-only Landlock rules: listing site-packages entry by entry costs a few hundred
    ms, and a batch starts hundreds of sandboxes with the same hidden paths."""
    from grader.sandbox import landlock
    return [p for r in readable_paths() for p in landlock.allowed_entries(r, list(hidden))]


class Sandbox:
    """A child process running one submission's code under ``limits``."""

    def __init__(self, source: str, limits: Limits = Limits(), hide: list[Path] = (),
                 isolate: bool = True, helpers: str = ""):
        self.source = source
        self.helpers = helpers
        """Trusted code run in the submission's namespace right after it loads (and after
        every reload), e.g. counting helpers that replace the learner's copies."""
        self.limits = limits
        self.isolate = isolate
        self.isolation = "not started"
        self.load_error: CallResult | None = None
        self.spent = 0.0
        self._hide = list(hide)
        self._proc: subprocess.Popen | None = None
        self._tmp: str | None = None
        self._marker = ""
        self._output = _Output(limits.output_kb * 1024)

    # -- life cycle -------------------------------------------------------------------
    def _spawn(self) -> CallResult:
        self._tmp = tempfile.mkdtemp(prefix="bpt-sandbox-")
        self._marker = f"{os.getpid()}-{secrets.token_hex(8)}"  # whose sandbox, and which
        env = {"PATH": "/usr/bin:/bin", "HOME": self._tmp, "TMPDIR": self._tmp, "LANG": "C.UTF-8",
               "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1", _MARKER: self._marker}
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        out_r, out_w = os.pipe()
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-B", str(WORKER), str(resp_w)], stdin=req_r, stdout=out_w, stderr=out_w,
            pass_fds=(resp_w,), cwd=self._tmp, env=env, start_new_session=True)
        for fd in (req_r, resp_w, out_w):
            os.close(fd)
        self._req, self._resp = req_w, resp_r
        threading.Thread(target=self._output.drain, args=(out_r,), daemon=True).start()
        read_only = _read_only_rules(tuple(hidden_paths(self._hide)))
        setup = {"limits": {"memory_mb": self.limits.memory_mb, "file_mb": self.limits.file_mb,
                            "total_seconds": self.limits.total_seconds},
                 "tmpdir": self._tmp, "isolate": self.isolate, "read_only": read_only,
                 "read_write": [self._tmp, "/dev/null"]}
        return self._exchange(setup, self.limits.call_seconds + 5, what="starting the sandbox")

    def start(self) -> CallResult:
        """Start the child and load the submission; the result says whether loading worked."""
        started = self._spawn()
        if not started.ok:
            self.load_error = started
            return started
        self.isolation = started.value.get("isolation", "none") if isinstance(started.value, dict) else "none"
        loaded = self._exchange({"op": "load", "source": self.source}, self.limits.call_seconds,
                                what="loading your code")
        if loaded.ok and self.helpers:
            loaded = self._exchange({"op": "load", "source": self.helpers, "name": "<grader helpers>"},
                                    self.limits.call_seconds, what="loading the grader's helpers after your code")
        if not loaded.ok:
            self.load_error = loaded
            self.close()
        return loaded

    def close(self) -> None:
        """Kill the child and everything it started; remove its temp dir."""
        if self._proc is not None:
            kill_tree(self._proc.pid, self._marker)
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            for fd in (self._req, self._resp):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._proc = None
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
        text = self._output.kept.decode("utf-8", "replace")
        if self._output.total > len(self._output.kept):
            text += f"\n... ({self._output.total - len(self._output.kept)} more bytes dropped)"
        return text

    # -- calls ------------------------------------------------------------------------
    def call(self, fn: str, *args, echo_args: bool = False, measure_memory: bool = False) -> CallResult:
        """Call the learner's ``fn(*args)`` in the child; never raises for the learner's faults."""
        if self.spent >= self.limits.total_seconds:
            return CallResult(False, kind="budget", error=(
                f"not run: your code used up the total time limit of {self.limits.total_seconds:g} s"))
        if self._proc is None:
            if self.load_error is not None and self.load_error.kind not in ("timeout", "crash"):
                return self.load_error
            loaded = self.start()
            if not loaded.ok:
                return loaded
        budget = min(self.limits.call_seconds, self.limits.total_seconds - self.spent)
        result = self._exchange({"op": "call", "fn": fn, "args": list(args), "echo_args": echo_args,
                                 "measure_memory": measure_memory}, budget, what=f"{fn}()")
        if result.ok:
            reply = result.value
            return CallResult(True, value=reply.get("value"), args_after=reply.get("args_after"),
                              memory=reply.get("memory"), seconds=result.seconds)
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

    def _exchange(self, msg, timeout: float, what: str) -> CallResult:
        start = time.monotonic()
        try:
            wire.write_frame(self._req, msg)
            body = self._read_frame(start + timeout)
        except TimeoutError:
            self.spent += time.monotonic() - start
            self.close()
            return CallResult(False, kind="timeout", error=(
                f"{what} did not finish within {timeout:g} s (an endless loop, or far too slow)"))
        except (EOFError, BrokenPipeError, OSError):
            self.spent += time.monotonic() - start
            code = self._exit_code()
            self.close()
            return CallResult(False, kind="crash", error=f"{what} crashed the Python process ({code})")
        except wire.WireError as e:
            self.spent += time.monotonic() - start
            self.close()
            return CallResult(False, kind="bad_return", error=f"{what} sent back something unreadable ({e})")
        elapsed = time.monotonic() - start
        self.spent += elapsed
        try:
            reply = wire.decode(body)
        except wire.WireError as e:
            self.close()
            return CallResult(False, kind="bad_return", error=f"{what} sent back something unreadable ({e})")
        if not isinstance(reply, dict):
            self.close()
            return CallResult(False, kind="bad_return", error=f"{what} broke the grader's protocol")
        if reply.get("ok") is True:
            return CallResult(True, value=reply, seconds=elapsed)
        return CallResult(False, kind=str(reply.get("kind", "exception")),
                          error=self._describe_failure(reply, what), seconds=elapsed)

    def _read_frame(self, deadline: float) -> bytes:
        def exact(n: int) -> bytes:
            chunks, need = [], n
            while need:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                ready, _, _ = select.select([self._resp], [], [], left)
                if not ready:
                    raise TimeoutError
                chunk = os.read(self._resp, min(need, 1 << 20))
                if not chunk:
                    raise EOFError
                chunks.append(chunk)
                need -= len(chunk)
            return b"".join(chunks)
        (n,) = wire._LEN.unpack(exact(8))
        if n > self.limits.message_mb * 1024 * 1024:
            raise wire.WireError(f"an answer of {n} bytes is over the {self.limits.message_mb} MB limit")
        return exact(n)

    def _exit_code(self) -> str:
        try:
            code = self._proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            return "it stopped answering"
        if code < 0:
            name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
            return f"killed by {name}"
        return f"exit status {code}"

    def _describe_failure(self, reply: dict, what: str) -> str:
        kind = reply.get("kind")
        if kind == "missing":
            return f"{what.rstrip('()')} is not defined in your code"
        if kind == "bad_return":
            return f"{what} returned a value the grader cannot use: {reply.get('message', '')}"
        err = reply.get("error") or {}
        if kind == "not_implemented":
            return f"{what} is not implemented yet (it raises NotImplementedError)"
        where = self.locate(err.get("line"))
        message = f": {err.get('message')}" if err.get("message") else ""
        return f"{what} raised {err.get('type', 'an exception')}{message}{where}"

    def locate(self, line) -> str:
        """' (cell 4, line 2: `code`)' for a line of the joined submission source."""
        if not isinstance(line, int):
            return ""
        lines = self.source.splitlines()
        if not 1 <= line <= len(lines):
            return ""
        cell, offset = None, line
        for i in range(line - 1, -1, -1):
            if lines[i].startswith("# --- cell ") and lines[i].endswith(" ---"):
                cell, offset = lines[i][len("# --- cell "):-4], line - i - 1
                break
        code = lines[line - 1].strip()
        place = f"cell {cell}, line {offset}" if cell is not None else f"line {line}"
        return f" ({place}: `{code[:80]}`)"


def kill_tree(pid: int, marker: str, wait_seconds: float = 2.0) -> None:
    """SIGKILL the child's process group and session, and any process carrying its marker
    (a grandchild that escaped with setsid still inherits the environment). SIGKILL lands
    asynchronously, so scan again until none of them is alive (zombies are dead) or the
    bounded wait ends: when this returns, nothing of the submission still runs."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    needle = f"{_MARKER}={marker}".encode()
    deadline = time.monotonic() + wait_seconds
    while _kill_matching(pid, needle) and time.monotonic() < deadline:
        time.sleep(0.01)


def _kill_matching(sid_wanted: int, needle: bytes) -> bool:
    """SIGKILL every live process in session ``sid_wanted`` or carrying ``needle`` in its
    environment; return whether any was found."""
    found = False
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().rsplit(b")", 1)[1].split()
            if stat[0] in (b"Z", b"X"):  # already dead, waiting to be reaped
                continue
            if int(stat[3]) != sid_wanted:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if needle not in f.read().split(b"\0"):
                        continue
            os.kill(int(entry), signal.SIGKILL)
            found = True
        except (OSError, IndexError, ValueError):
            continue
    return found
