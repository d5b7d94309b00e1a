"""The conversation with the sandbox's child: one request, one answer, within a deadline.

Frames cross as ``wire`` messages (never pickle); while a call runs, the child may ``ask``
the grader for a service (a counted product), answered here. A hang, a crash or a broken
frame ends the whole sandbox and becomes a ``CallResult`` with one sentence for the learner;
what the child prints is drained and capped meanwhile (``Output``).
"""
from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field

from backprop_traps.grader.sandbox import wire
from backprop_traps.grader.sandbox.failures import describe_failure, inert_failure
from backprop_traps.grader.sandbox.inert import inert
from backprop_traps.grader.sandbox.refusals import refused_by_sandbox

REFUSED = "refused"
"""A ``CallResult.kind``: a library failed because of the sandbox itself (refusals.py); the
grader's error, never the learner's."""
MAX_ASKS = 100_000
"""Requests to grader-side services in one call (a Jacobian by JVPs takes hundreds)."""


@dataclass
class CallResult:
    """What one call into the learner's code gave."""
    ok: bool
    value: object = None
    kind: str = ""
    """On failure: timeout, crash, exception, not_implemented, missing, bad_return, budget,
    refused (the sandbox's doing: ``REFUSED``)."""
    error: str = ""
    """On failure, one sentence for the learner."""
    args_after: list | None = None
    memory: dict | None = None
    seconds: float = 0.0


@dataclass
class Output:
    """Drains the child's stdout/stderr so a flood can neither block nor fill memory.

    Reads and appends happen under one lock, so ``settle`` can take what is still in the pipe
    when an answer arrives: the child flushes before it answers, so whatever it printed by then
    is in ``kept`` once ``settle`` returns (the drain thread alone could lag behind the answer)."""
    limit: int
    kept: bytearray = field(default_factory=bytearray)
    total: int = 0
    _fd: int = -1
    _ended: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def attach(self, fd: int) -> None:
        """Before the drain thread starts, so ``settle`` never misses the pipe."""
        os.set_blocking(fd, False)  # reads happen only when poll says so, or in ``settle``
        self._fd = fd

    def _take(self) -> bool:
        """One read under the lock; False at the end of the pipe."""
        if self._ended:
            return False
        try:
            chunk = os.read(self._fd, 1 << 16)
        except BlockingIOError:
            return True
        except OSError:
            chunk = b""
        if not chunk:
            self._ended = True
            return False
        self.total += len(chunk)
        room = self.limit - len(self.kept)
        if room > 0:
            self.kept += chunk[:room]
        return True

    def drain(self, fd: int) -> None:
        if self._fd != fd:
            self.attach(fd)
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        going = True
        while going:
            try:
                poller.poll()
            except OSError:
                pass
            with self._lock:
                going = self._take()
        os.close(fd)  # only this thread closes it: a number reused elsewhere is never polled

    def settle(self) -> None:
        """Take what the pipe holds now (bounded: the child may still be printing)."""
        with self._lock:
            for _ in range(64):
                if self._fd < 0 or self._ended:
                    return
                try:
                    ready = select.select([self._fd], [], [], 0)[0]
                except (OSError, ValueError):
                    return
                if not ready or not self._take():
                    return


class Channel:
    """The grader's end of the pipes to one child (``Sandbox`` starts and ends the child)."""
    _proc: subprocess.Popen | None
    _req: int
    _resp: int
    limits: object
    services: dict
    spent: float
    isolation: str
    source: str
    cells: list | None
    warnings: list

    def close(self) -> None:
        raise NotImplementedError

    def _exchange(self, msg, timeout: float, what: str) -> CallResult:
        """Send ``msg`` and read the answer within ``timeout`` (decoding included), serving
        the child's ``ask`` requests meanwhile."""
        start = time.monotonic()
        deadline = start + timeout
        if self._proc is None:
            return CallResult(False, kind="crash", error=f"{what}: the sandbox had already ended")
        asks = 0
        try:
            self._send(msg, deadline)
            while True:
                reply = wire.decode(self._read_frame(deadline))
                if time.monotonic() > deadline:
                    raise TimeoutError
                if not (isinstance(reply, dict) and reply.get("op") == "ask"):
                    break
                asks += 1
                if asks > MAX_ASKS:
                    raise wire.WireError(f"more than {MAX_ASKS} requests to the grader in one call")
                self._send(self._serve(reply), deadline)
        except TimeoutError:
            self.spent += time.monotonic() - start
            self.close()
            return CallResult(False, kind="timeout", error=(
                f"{what} did not finish within {timeout:g} s ({self.limits.too_slow()})"))
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
        if not isinstance(reply, dict):
            self.close()
            return CallResult(False, kind="bad_return", error=f"{what} broke the grader's protocol")
        if reply.get("ok") is True:
            return CallResult(True, value=reply, seconds=elapsed)
        reply = inert_failure(reply)
        said = describe_failure(reply, what, self.source, self.cells, self.warnings)
        withheld = refused_by_sandbox(reply.get("error")) if reply.get("kind") == "exception" else None
        if withheld:  # a library failed for what the sandbox withholds: the grader's error
            return CallResult(False, kind=REFUSED, seconds=elapsed,
                              error=f"{said}. The sandbox caused this, not your code: {withheld}.")
        return CallResult(False, kind=str(reply.get("kind", "exception")), error=said, seconds=elapsed)

    def _send(self, msg, deadline: float) -> None:
        """Write one frame to the child before ``deadline`` (TimeoutError otherwise)."""
        for chunk in wire.coalesced(wire.encode_chunks(msg)):
            view = memoryview(chunk)
            while view:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([], [self._req], [], left)[1]:
                    raise TimeoutError
                try:
                    view = view[os.write(self._req, view):]
                except BlockingIOError:
                    continue

    def _serve(self, request: dict) -> dict:
        """Answer one ``ask`` from the child with a grader-side service; nothing raises."""
        name = request.get("name")
        service = self.services.get(name) if isinstance(name, str) and not name.startswith("_") else None
        args = request.get("args")
        if service is None or not isinstance(args, list):
            return {"error": f"the grader offers no service {inert(str(request.get('name')), 40)!r}"}
        try:
            return {"value": service(*args)}
        except Exception as e:  # noqa: BLE001 (a bad argument from the child, reported back)
            return {"error": inert(str(e), 300)}

    def _read_frame(self, deadline: float) -> bytearray:
        def read(n: int) -> bytes:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self._resp], [], [], left)
            if not ready:
                raise TimeoutError
            return os.read(self._resp, n)
        return wire.read_frame_body(read, self.limits.message_mb * 1024 * 1024)

    def _exit_code(self) -> str:
        try:
            code = self._proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            return "it stopped answering"
        if code > 128 and "bubblewrap" in self.isolation:
            code = 128 - code  # bwrap exits 128 + N when the worker was killed by signal N
        if code < 0:
            name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
            return f"killed by {name}"
        return f"exit status {code}"
