"""Small data types for grading results, and their JSON form (CONTRACT.md, exactly)."""
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

    def to_json(self) -> dict:
        return {"name": self.name, "points": self.points, "max_points": self.max_points,
                "passed": self.passed, "trap": self.trap, "feedback": self.feedback}


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
    """The seed of the hidden inputs (``--seed`` replays it)."""
    isolation: str = ""
    """How the child was isolated, e.g. 'landlock-abi-7', or 'none' where the platform cannot."""
    output: str = ""
    """What the learner's code printed (capped)."""
    public: VisibleTests | None = None
    """The notebook's visible tests, when asked for (not in the JSON: CONTRACT.md is exact)."""

    def to_json(self) -> dict:
        return {"submission": self.submission, "question": self.question,
                "score": self.score, "max_score": self.max_score, "error": self.error,
                "tests": [t.to_json() for t in self.tests]}
