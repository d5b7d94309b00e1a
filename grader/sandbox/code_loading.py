"""Loading a submission into the sandbox's child: its imports, then its code cell by cell.

A mixin of ``Sandbox`` (process.py), which owns the child and the exchange: this file holds
only the order of loading and its budgets. The submission's import statements may load first
on their own (the memory meter's baseline is read after them; a batch's short code budget
counts only the learner's own code), then each cell within what is left of the budget, past
cells that raise (as Run All with errors allowed), then the grader's trusted helpers.
"""
from __future__ import annotations

import time

from backprop_traps.grader import timeline
from backprop_traps.grader.sandbox.channel import REFUSED, CallResult

MAX_WARNINGS = 20
"""Load warnings kept per submission (one per raising cell); the rest are counted."""


class LoadsSubmission:
    """``start`` and the loading steps; uses the ``Sandbox``'s child, limits and meter."""

    def _meter_baseline(self) -> CallResult | None:
        """Before any learner code runs: load only the submission's import statements, then
        read the sandbox's memory. A measured call's peak counts from here, so memory that
        the learner's code holds from load time (a pre-filled pool) counts too, while the
        libraries it imports do not. Only a sandbox started for a measured call pays for it."""
        if not self._measuring or not self._meter.measures:
            return None
        spent = self.spent  # libraries' start-up is not the learner's time: not charged
        done = self._load_imports()
        if done.ok or done.kind in ("exception", "not_implemented", REFUSED):
            done = self._exchange({"op": "settle"}, self.limits.call_seconds, what="settling")
        self.spent = spent
        if done.ok:
            self._meter.start()
        timeline.mark("memory baseline (the learner's imports, settle)")
        return done

    def _load_imports(self) -> CallResult:
        """Run only the submission's import statements (found in the child), within the load
        budget; the learner's own code then loads within ``limits.code_budget``."""
        sources = [fallback or source for _, source, fallback in self.cells] if self.cells else [self.source]
        done = self._exchange({"op": "load_imports", "sources": sources},
                              self.limits.load_budget, what="importing the libraries your code uses")
        if done.kind == REFUSED:
            self.refused = self.refused or done.error
        self._imports_loaded = done.ok or done.kind in ("exception", "not_implemented", REFUSED)
        return done

    def start(self) -> CallResult:
        """Start the child and load the submission; the result says whether loading worked.

        A notebook loads cell by cell (``self.cells``; a ``.py`` file is ``self.source``, one
        cell), as Jupyter's "Run
        All" does when errors are allowed (nbgrader's way): a cell that raises, or is not
        Python, becomes one line in ``self.warnings`` (once, whatever the restarts) and the
        next cell runs. Only a hang or a crash stops the load, which has one call's time."""
        started = self._spawn()
        if not started.ok:
            self.load_error = started
            return started
        cells = self.cells or [("", self.source, None)]
        if self.limits.code_seconds is not None and not self._imports_loaded:
            spent = self.spent  # libraries' start-up is not the learner's time: not charged
            imported = self._load_imports()
            self.spent = spent
            timeline.mark("the learner's imports")
            if not self._imports_loaded:
                self.load_error = imported
                self.close()
                return imported
        budget = self.limits.code_budget if self._imports_loaded else self.limits.load_budget
        deadline = time.monotonic() + budget
        loaded = CallResult(True)
        for label, source, fallback in cells:
            request = {"op": "load", "source": source, "name": f"<{label}>" if label else "<submission>"}
            if fallback and fallback != source:
                request["fallback"] = fallback  # magics blanked: compiled if the cell is not Python
            loaded = self._exchange(request, max(deadline - time.monotonic(), 0.01),
                                    what=f"loading {label or 'your code'}")
            if not loaded.ok and loaded.kind in ("exception", "not_implemented", REFUSED):
                if loaded.kind == REFUSED:  # the grader's error: the checks that fail say so
                    self.refused = self.refused or loaded.error
                self._warn(label, loaded.error)
                loaded = CallResult(True)
            elif not loaded.ok:
                if loaded.kind == "timeout":
                    loaded.error = (f"loading your code did not finish within {budget:g} s"
                                    + (f" ({label} was still running)" if label else "")
                                    + f": {self.limits.too_slow()}")
                break
        timeline.mark("load the learner's code")
        if loaded.ok and self.helpers:
            loaded = self._exchange({"op": "load", "source": self.helpers, "name": "<grader helpers>"},
                                    self.limits.call_seconds, what="loading the grader's helpers after your code")
            timeline.mark("load the grader's helpers")
        if not loaded.ok:
            self.load_error = loaded
            self.close()
        return loaded

    def _warn(self, label: str, error: str) -> None:
        """Keep a cell's load warning; past ``MAX_WARNINGS`` only count them (a notebook of
        thousands of raising cells must not flood the report)."""
        if label in self._warned or error in self.warnings:
            return
        self._warned.add(label)
        if len(self._warned) < MAX_WARNINGS:
            self.warnings.append(error)
        else:
            more = len(self._warned) - MAX_WARNINGS + 1
            line = f"... and {more} more cells raised while loading"
            self.warnings[MAX_WARNINGS - 1:] = [line]
