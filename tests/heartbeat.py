"""A line every minute while the suite runs, so a slow suite is told apart from a hung one
(issue 51: under `-n auto` the dots line can stand still for minutes while the long tests run).

Registered by tests/conftest.py in the process that reports (the xdist controller, or the only
process with `-n 0`): it follows the tests that start and finish (xdist forwards both hooks
from its workers) and, from a daemon thread, writes one line a minute: the time so far, how
many tests are done, and the tests running longest, with how long each has run.
"""
from __future__ import annotations

import os
import threading
import time

import pytest

EVERY_S = float(os.environ.get("BACKPROP_TRAPS_HEARTBEAT_S") or 60.0)
"""Seconds between two lines (``BACKPROP_TRAPS_HEARTBEAT_S`` sets another)."""


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


class Heartbeat:
    """The bookkeeping and the line; ``start`` runs the thread that writes it."""

    def __init__(self, write, every_s: float = EVERY_S, monotonic=time.monotonic):
        self.write, self.every_s, self.monotonic = write, every_s, monotonic
        self.began = monotonic()
        self.running: dict[str, float] = {}
        self.done = 0
        self.total: int | None = None
        self.lock = threading.Lock()
        self.stopped = threading.Event()

    # the hooks (pytest calls them with keyword arguments)
    def pytest_runtest_logstart(self, nodeid, location):
        with self.lock:
            self.running[nodeid] = self.monotonic()

    def pytest_runtest_logfinish(self, nodeid, location):
        with self.lock:
            if self.running.pop(nodeid, None) is not None:
                self.done += 1

    def pytest_collection_finish(self, session):
        self.total = len(session.items) or self.total

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):  # the controller collects nothing itself
        self.total = len(ids)

    def pytest_unconfigure(self, config):
        self.stopped.set()

    def line(self) -> str | None:
        """The progress line now, or None while no test runs (before the first, after the last)."""
        now = self.monotonic()
        with self.lock:
            if not self.running:
                return None
            longest = sorted(self.running.items(), key=lambda kv: kv[1])[:3]
            done, total = self.done, self.total
        of = f" of {total}" if total else ""
        running = "; ".join(f"{nodeid} ({_clock(now - since)})" for nodeid, since in longest)
        return (f"[{_clock(now - self.began)}] {done}{of} tests done"
                + (f"; running longest: {running}" if running else ""))

    def start(self) -> None:
        def beat():
            while not self.stopped.wait(self.every_s):
                text = self.line()
                if text:
                    self.write(text)
        threading.Thread(target=beat, name="test-heartbeat", daemon=True).start()
