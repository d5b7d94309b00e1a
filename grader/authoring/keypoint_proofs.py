"""``grade validate``'s proofs about a question's key points (grader/learner/keypoints.py).

The checklist of ``grade interview`` must reward the right answer and not the usual wrong
one: the question's own hired answer hits every key point, the wrong answer most candidates
give (its opening quotation, the words a candidate says) hits fewer than half, and an empty
answer hits none. Standard library only.
"""
from __future__ import annotations

from backprop_traps.grader.authoring.findings import FAIL, OK, QuestionReport
from backprop_traps.grader.learner import keypoints


def prove(report: QuestionReport, interview) -> bool:
    """Add one finding per proof to ``report``; True when all three hold."""
    points = interview.key_points
    if not points:
        report.add(FAIL, "no key points: end the interview cell with **Key points.** "
                         "(4 to 7 bullets, see grader/learner/keypoints.py)")
        return False
    ok = True
    missed = [p.point for p, hit in zip(points, keypoints.hits(points, interview.hired)) if not hit]
    if missed:
        ok = False
        report.add(FAIL, f"the hired answer misses {len(missed)} of {len(points)} key points: "
                         "add a way of saying each that the answer uses", missed)
    wrong = [p.point for p, hit in zip(points, keypoints.hits(points, interview.wrong_quote)) if hit]
    if 2 * len(wrong) >= len(points):
        ok = False
        report.add(FAIL, f"the wrong answer hits {len(wrong)} of {len(points)} key points (it must hit "
                         "fewer than half): those points' alternatives are too loose", wrong)
    empty = [p.point for p, hit in zip(points, keypoints.hits(points, "")) if hit]
    if empty:
        ok = False
        report.add(FAIL, "an empty answer hits key points (an alternative with nothing to look for)", empty)
    if ok:
        report.add(OK, f"key points: the hired answer hits all {len(points)}, the wrong answer "
                       f"{len(wrong)}, an empty answer none")
    return ok
