"""How often each check failed across a class: the question an instructor asks after a batch
("which part did everyone get wrong?"), per check rather than per question.

Counted over the submissions that were graded: a file that could not be graded has no checks,
and an untouched stub fails every check without anyone having tried, so both are left out
(the summary lists them apart). A student who handed in several files for one question counts
once, by their best-scoring file."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass


@dataclass(frozen=True)
class CheckRate:
    question: str
    check: str
    failed: int
    graded: int

    @property
    def share(self) -> float:
        return self.failed / self.graded if self.graded else 0.0


def _best_per_student(entries) -> list:
    best: dict[tuple[str, str], object] = {}
    for e in entries:
        result = e.result
        if result.get("error") or result.get("grader_error") or (getattr(e, "meta", None) or {}).get("untouched_stub"):
            continue
        key = (e.job.student, str(result.get("question")))
        score = float(result.get("score") or 0.0)
        if key not in best or score > float(best[key].result.get("score") or 0.0):
            best[key] = e
    return list(best.values())


def check_failure_rates(entries) -> list[CheckRate]:
    """Every (question, check) seen, most often failed first (then by question and name)."""
    failed: dict[tuple[str, str], int] = defaultdict(int)
    graded: dict[tuple[str, str], int] = defaultdict(int)
    for e in _best_per_student(entries):
        question = str(e.result.get("question"))
        for test in e.result.get("tests") or []:
            if not isinstance(test, dict) or not test.get("name"):
                continue
            key = (question, str(test["name"]))
            graded[key] += 1
            failed[key] += not test.get("passed")
    rates = [CheckRate(q, c, failed[(q, c)], n) for (q, c), n in graded.items()]
    return sorted(rates, key=lambda r: (-r.share, -r.failed, r.question, r.check))


def rate_lines(rates: list[CheckRate], question: str, shown=str) -> list[str]:
    """The summary's lines for one question's checks: share failed, counts, the check."""
    mine = [r for r in rates if r.question == question]
    if not mine:
        return []
    lines = ["  checks, most often failed first (graded submissions, best file per student):"]
    lines += [shown(f"  {100 * r.share:5.0f}%  {r.failed:>4} of {r.graded:<4}  {r.check}") for r in mine]
    return lines
