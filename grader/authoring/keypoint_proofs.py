"""``grade validate``'s proofs about a question's key points (grader/learner/keypoints.py).

The checklist of ``grade interview`` must reward the right answer and nothing else:

- the question's own hired answer hits every key point; the wrong answer most candidates give
  (its opening quotation), the question read back, and an empty answer hit fewer than half;
- answers generated from the hired answer are judged right: its claims mutated and its key terms
  dressed as claim-free text score under a quarter, its paraphrases 80% or more
  (grader/authoring/claim_proofs.py);
- the question's adversarial corpus (grader/authoring/keypoint_corpus.py,
  ``docs/interview_corpus/<id>.md``) holds a keyword list, the hired answer negated, one answer
  per trap of the solution's mistakes list, and at least three paraphrases: every answer but
  the paraphrases hits fewer than half, and each paraphrase at least 80%.

A question without a corpus fails, and says where to write one. Standard library only (the
trap list is read with nbformat, as the rest of validate does).
"""
from __future__ import annotations

from pathlib import Path

from backprop_traps.grader.authoring import claim_proofs
from backprop_traps.grader.authoring import keypoint_corpus as corpus
from backprop_traps.grader.authoring.findings import FAIL, OK, QuestionReport
from backprop_traps.grader.learner import keypoints


def _score(points, text: str, question: str) -> tuple[int, list]:
    verdicts = keypoints.check(points, text, question)
    return sum(v.hit for v in verdicts), verdicts


def prove(report: QuestionReport, interview, question: str | None = None, root: Path | None = None) -> bool:
    """Add one finding per proof to ``report``; True when all hold. Without ``question`` and
    ``root``, only the notebook's own answers are proved (no corpus)."""
    points = interview.key_points
    if not points:
        report.add(FAIL, "no key points: end the interview cell with **Key points.** "
                         "(4 to 7 bullets, see grader/learner/keypoints.py)")
        return False
    asked = interview.question
    ok = True
    n = len(points)
    hits, verdicts = _score(points, interview.hired, asked)
    missed = [f"{v.point} ({v.why_not})" for v in verdicts if not v.hit]
    if missed:
        ok = False
        report.add(FAIL, f"the hired answer misses {len(missed)} of {n} key points: "
                         "add a way of saying each that the answer uses", missed)
    for label, text in (("the wrong answer", interview.wrong_quote), ("the question read back", asked)):
        hit, verdicts = _score(points, text, asked)
        if 2 * hit >= n:
            ok = False
            report.add(FAIL, f"{label} hits {hit} of {n} key points (it must hit fewer than half): "
                             "those points' alternatives are too loose",
                       [f"{v.point}: «{v.evidence}»" for v in verdicts if v.hit])
    empty = [v.point for v in keypoints.check(points, "", asked) if v.hit]
    if empty:
        ok = False
        report.add(FAIL, "an empty answer hits key points (an alternative with nothing to look for)", empty)
    if ok:
        report.add(OK, f"key points: the hired answer hits all {n}; the wrong answer, the question "
                       "read back and an empty answer fewer than half")
        ok = claim_proofs.prove(report, interview)  # mutants, dresses, paraphrases derived from it
    if question is not None and root is not None:
        ok = _prove_corpus(report, points, asked, question, Path(root)) and ok
    return ok


def _trap_ids(question: str, root: Path) -> list[str]:
    from backprop_traps.grader.authoring.trap_list import listed_traps
    from backprop_traps.grader.loading.questions import solution_path
    try:
        return listed_traps(solution_path(question, root)) or []
    except Exception:  # an unreadable notebook: the interview and trap-list steps say why
        return []


def _prove_corpus(report: QuestionReport, points, asked: str, question: str, root: Path) -> bool:
    shown = f"{corpus.FOLDER}/{question}.md"
    loaded = corpus.load(question, root)
    if loaded is None:
        report.add(FAIL, f"no adversarial corpus for the key points: write {shown} (a keyword list, the "
                         "hired answer negated, one answer per trap, three paraphrases; docs/authoring.md, "
                         "\"The key points and their corpus\")")
        return False
    answers, problems = loaded
    ok = True
    if problems:
        ok = False
        report.add(FAIL, f"{shown} is malformed", problems)
    kinds = [a.kind for a in answers]
    wanted = [f"a ## {k} answer" for k in ("keywords", "negated") if k not in kinds]
    paraphrases = kinds.count("paraphrase")
    if paraphrases < corpus.MIN_PARAPHRASES:
        wanted.append(f"{corpus.MIN_PARAPHRASES - paraphrases} more ## paraphrase <style> answers")
    traps = {a.label for a in answers if a.kind == "trap"}
    wanted += [f"## trap {t}" for t in _trap_ids(question, root) if t not in traps]
    if wanted:
        ok = False
        report.add(FAIL, f"{shown} lacks answers the proof needs", wanted)
    n = len(points)
    loose, strict, lowest, highest = [], [], 1.0, 0.0
    for answer in answers:
        hit, verdicts = _score(points, answer.text, asked)
        if answer.must_pass:
            lowest = min(lowest, hit / n)
            if hit < corpus.PASS_SHARE * n:
                strict.append(f"{answer.name}: {hit}/{n}; missed: " + "; ".join(
                    f"{v.point} ({v.why_not})" for v in verdicts if not v.hit))
        else:
            highest = max(highest, hit / n)
            if 2 * hit >= n:
                loose.append(f"{answer.name}: {hit}/{n}; hit by: " + "; ".join(
                    f"{v.point} «{v.evidence}»" for v in verdicts if v.hit))
    if loose:
        ok = False
        report.add(FAIL, f"{len(loose)} answer(s) of {shown} that must hit fewer than half of the key "
                         "points hit more: tighten those points' alternatives", loose)
    if strict:
        ok = False
        report.add(FAIL, f"{len(strict)} paraphrase(s) of {shown} hit under {corpus.PASS_SHARE:.0%} of the "
                         "key points: add the ways they say them (or glossary synonyms)", strict)
    if ok:
        report.add(OK, f"key points against {shown}: {len(answers) - paraphrases} wrong or gaming answers "
                       f"all under half (the most {highest:.0%}), {paraphrases} paraphrases all at "
                       f"{corpus.PASS_SHARE:.0%} or more (the least {lowest:.0%})")
    return ok
