"""Children launched ahead for a sandbox's measured calls: each measured call runs in a fresh
child (``Sandbox.call``), and booting one (bubblewrap, Python, numpy) takes about 0.1 s, so
the next ones boot while the grader works or the calls before them run."""
from __future__ import annotations

DEPTH = 2
"""Children booting at once: one call ahead is not enough when the calls are shorter than a
child's boot (attention_backward's four take 25 to 60 ms each)."""


class Spares:
    """The children launched ahead, oldest first. ``make()`` returns a new, launched sandbox."""

    def __init__(self, make):
        self._make = make
        self.ready: list = []
        self.expected = self.used = 0

    def expect(self, count: int) -> None:
        """About ``count`` measured calls will come. A wrong count costs only time: a child
        never used is ended with the sandbox."""
        self.expected = count
        self.top_up()

    def top_up(self) -> None:
        while len(self.ready) < DEPTH and self.used + len(self.ready) < self.expected:
            self.ready.append(self._make())

    def take(self):
        """The oldest child launched ahead, for the measured call starting now (or None), and
        the next one launched."""
        self.used += 1
        spare = self.ready.pop(0) if self.ready else None
        self.top_up()
        return spare

    def close(self) -> None:
        while self.ready:
            self.ready.pop().close()
