"""Small data types for grading results, and their JSON form (docs/contract.md)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CheckResult:
    """The outcome of one hidden check."""
    name: str
    """The check's name, in words a learner understands."""
    points: float
    """Points earned."""
    max_points: float
    """Points available."""
    passed: bool
    trap: str | None = None
    """The id of the known mistake recognised, if any (CONTRACT.md's trap ids)."""
    feedback: str = ""
    """One or two sentences: what went wrong and how to fix it; empty when passed."""
    hints: tuple[str, ...] = ()
    """The check's hints (not in the JSON: shown one at a time on request)."""
    grader_error: bool = False
    """The check itself broke (an exception that is not a ``Fail``): the grader's fault, not
    the learner's; in the JSON as ``"grader_error": true``, only when true."""

    def to_json(self) -> dict:
        doc = {"name": self.name, "points": self.points, "max_points": self.max_points,
               "passed": self.passed, "trap": self.trap, "feedback": self.feedback}
        if self.grader_error:
            doc["grader_error"] = True
        return doc


@dataclass
class VisibleTests:
    """The notebook's own visible test cells, run after the learner's code (never scored)."""
    passed: int
    total: int
    failures: list[str] = field(default_factory=list)
    """One line per failed cell: its name, the exception, the line."""
    error: str = ""
    """Why they could not run at all, if so."""


@dataclass
class GradeResult:
    """The grade of one submission."""
    submission: str
    question: str | None
    score: float
    max_score: float
    error: str | None = None
    """A sentence when the submission could not be graded at all; then score is 0."""
    tests: list[CheckResult] = field(default_factory=list)
    seed: int | None = None
    """The seed of the hidden inputs (``--seed`` replays it, with ``draw`` when there is one)."""
    draw: str | None = None
    """A course's value drawn at grading time (engine/draws.py), or None (practice); in the
    JSON as ``"draw"``, only when there is one."""
    token: str | None = None
    """A course's opaque replay token (batch/replay_token.py): what a student's report shows
    instead of the seed. In the JSON as ``"token"``, only when there is one."""
    isolation: str = ""
    """How the child was isolated, e.g. 'landlock-abi-7', or 'none' where the platform cannot."""
    output: str = ""
    """What the learner's code printed (capped)."""
    public: VisibleTests | None = None
    """The notebook's visible tests, when asked for (not in the JSON: CONTRACT.md is exact)."""
    manual: list[str] = field(default_factory=list)
    """The notebook's manually graded answer cells ("Your derivation"), listed with the visible
    tests as not auto-graded: never in the score, not in the JSON."""
    warnings: list[str] = field(default_factory=list)
    """One sentence per cell of the learner's that raised or is not Python while loading
    (grading went on past it); in the JSON as ``"warnings"``, only when there are some."""
    internal_error: bool = False
    """The grader broke down on this submission as a whole (see ``grader_error``)."""
    fingerprint: str | None = None
    """A hash of what was graded (``Submission.fingerprint``) for this folder's history, which
    counts a new attempt only when it changes; not in the JSON. None when nothing was read."""
    memory: str = ""
    """How its memory checks' calls were measured (``measure.Meter.label``): 'cgroup v2:
    tamper-proof', 'practice meter: not tamper-proof' (a learner's own practice, no cgroup), or
    'not measured: ...'; in the JSON as ``"memory"``, only for a question that measures memory."""

    @property
    def grader_error(self) -> bool:
        """Whether the grader, not the learner, is at fault somewhere in this result: such a
        result is not a grade to keep (``grade batch`` grades it again on its next run)."""
        return self.internal_error or any(t.grader_error for t in self.tests)

    def to_json(self) -> dict:
        """The contract's object, plus ``seed`` and ``isolation`` (added keys the contract
        allows, promised by the README), and ``warnings`` and ``grader_error`` when they have
        something to say."""
        doc = {"submission": self.submission, "question": self.question,
               "score": self.score, "max_score": self.max_score, "error": self.error,
               "tests": [t.to_json() for t in self.tests], "seed": self.seed,
               "isolation": self.isolation}
        if self.draw is not None:
            doc["draw"] = self.draw
        if self.token is not None:
            doc["token"] = self.token
        if self.warnings:
            doc["warnings"] = list(self.warnings)
        if self.memory:
            doc["memory"] = self.memory
        if self.grader_error:
            doc["grader_error"] = True
        return doc
