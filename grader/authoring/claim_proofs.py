"""``grade validate``'s proof by generation: the key points refuse what is derived from the hired
answer to be wrong, and credit what is derived to be right.

For every key point, grader/authoring/claim_mutants.py derives mutants of the hired answer's
claim (negated, prohibited, antonym, quantity, condition) and dresses of its key terms (pipes,
slashes, and-chains, hashtags, "let's talk about", "the question of", a mind-map), and
grader/authoring/claim_paraphrases.py the hired answer said in other ways. The proof holds when:

- the mutants score under a quarter of the key points on average (``MUTANT_SHARE``): each is one
  claim, changed so that it no longer says its point; it may still say another point its
  sentence says, which is why the bar is an average and not zero;
- every dress of all the key terms together hits under a quarter of the points;
- every paraphrase hits at least ``keypoint_corpus.PASS_SHARE`` (80%) of them.

How many mutants and per-point dresses are refused outright is reported too (the benchmark
benchmarks/interview_matcher.py tabulates it per question). Standard library only.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from backprop_traps.grader.authoring import claim_mutants, claim_paraphrases, keypoint_corpus
from backprop_traps.grader.authoring.findings import FAIL, OK
from backprop_traps.grader.learner import keypoints

MUTANT_SHARE = 0.25
"""The mutants' mean share of the key points must stay under this; so must every dress."""


@dataclass
class Measure:
    """What one question's key points make of its generated answers."""
    points: int
    mutants: int = 0
    mutants_refused: int = 0
    """Mutants that do not hit the point they were made from."""
    mutant_share: float = 0.0
    """The mutants' mean share of the key points hit."""
    dresses: int = 0
    dresses_refused: int = 0
    """Dresses that hit neither their own point (per point) nor a quarter of all (all terms)."""
    dress_share: float = 0.0
    """The highest share a dress of every key term hits."""
    paraphrases: int = 0
    paraphrases_credited: int = 0
    """Paraphrases that hit at least 80% of the points."""
    paraphrase_share: float = 1.0
    """The lowest share a paraphrase hits."""
    misses: list[str] = field(default_factory=list)
    """One line per generated answer judged the wrong way."""

    @property
    def holds(self) -> bool:
        return (self.mutant_share < MUTANT_SHARE and self.dress_share < MUTANT_SHARE
                and self.paraphrases_credited == self.paraphrases)


def _hits(interview, text: str) -> list[bool]:
    return keypoints.hits(interview.key_points, text, interview.question)


def measure(interview) -> Measure:
    """Score every generated answer of ``interview`` against its key points."""
    n = len(interview.key_points)
    found = Measure(n)
    shares = []
    for g in claim_mutants.mutants(interview):
        hit = _hits(interview, g.text)
        found.mutants += 1
        shares.append(sum(hit) / n)
        if hit[g.point]:
            found.misses.append(f"mutant {g.kind} of point {g.point + 1} still hits it: «{g.text}»")
        else:
            found.mutants_refused += 1
    found.mutant_share = sum(shares) / len(shares) if shares else 0.0
    for g in claim_mutants.dresses(interview):
        hit = _hits(interview, g.text)
        found.dresses += 1
        if g.point is None:
            found.dress_share = max(found.dress_share, sum(hit) / n)
        loose = hit[g.point] if g.point is not None else 4 * sum(hit) >= n
        if loose:
            where = f"point {g.point + 1}" if g.point is not None else "all the terms"
            found.misses.append(f"{g.kind} of {where} hits {sum(hit)}: «{' '.join(g.text.split())}»")
        else:
            found.dresses_refused += 1
    for g in claim_paraphrases.paraphrases(interview):
        hit = _hits(interview, g.text)
        found.paraphrases += 1
        found.paraphrase_share = min(found.paraphrase_share, sum(hit) / n)
        if sum(hit) >= keypoint_corpus.PASS_SHARE * n:
            found.paraphrases_credited += 1
        else:
            missed = [p.point for p, h in zip(interview.key_points, hit) if not h]
            found.misses.append(f"paraphrase {g.kind} hits {sum(hit)}/{n}; missed: {'; '.join(missed)}")
    return found


def prove(report, interview) -> bool:
    """Add the proof's finding to ``report``; True when it holds."""
    if not interview.key_points or not interview.hired:
        return True  # the notebook's own proofs say what is missing
    m = measure(interview)
    summary = (f"generated answers: {m.mutants_refused}/{m.mutants} mutants refused (mean share "
               f"{m.mutant_share:.0%}), {m.dresses_refused}/{m.dresses} dresses refused (all terms at most "
               f"{m.dress_share:.0%}), {m.paraphrases_credited}/{m.paraphrases} paraphrases credited")
    if m.holds:
        report.add(OK, summary)
        return True
    report.add(FAIL, summary + f": mutants and dresses must stay under {MUTANT_SHARE:.0%}, paraphrases at "
                               f"{keypoint_corpus.PASS_SHARE:.0%} or more (grader/authoring/claim_proofs.py)",
               m.misses)
    return False
