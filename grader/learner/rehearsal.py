"""Rehearsing the spoken answer (``grade interview``): the question, the learner's answer,
the key points as a checklist, the wrong and the hired answers, then the follow-ups.

The flow talks to the learner through two functions, ``ask(prompt) -> line or None`` (None
at the end of input) and ``say(text)``, so the command can give it a terminal and tests a
script. The standard library only: no numpy, no nbformat on this path.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

from backprop_traps.grader.learner import keypoints
from backprop_traps.grader.learner.interview_cell import parse, read_notebook
from backprop_traps.grader.sandbox.inert import inert

WIDTH = 88
MAX_ANSWER_BYTES = 64 * 1024
"""The one cap of an answer, whichever way it comes (``grade interview --answer FILE``, ``-``
for stdin, the lines pasted into ``grade mock``): about 10,000 words, where a spoken answer is
a few hundred. A longer one is refused at once, and never more than this (plus a byte) read."""


class AnswerTooLong(ValueError):
    """An answer over ``MAX_ANSWER_BYTES``; ``str()`` is the sentence that refuses it."""


def too_long(where: str) -> AnswerTooLong:
    return AnswerTooLong(f"{where} is over {MAX_ANSWER_BYTES // 1024} KB, the most an answer may be "
                         "(about 10,000 words): it is not checked")


def answer_size(text: str) -> int:
    """The answer's size in bytes, as the cap counts it."""
    return len(text.encode("utf-8", errors="replace"))


class UnknownQuestion(LookupError):
    """The id names no question in the questions folder (the message says which exist)."""


@dataclass
class Rehearsal:
    """One question's interview, ready to rehearse."""
    question: str
    """The question's id."""
    number: str
    """Its number NN, from the solution notebook's name."""
    interview: object
    """The parsed interview cell (backprop_traps.grader.learner.interview_cell.Interview)."""


def load(question: str, root: Path) -> Rehearsal:
    """The interview of ``question`` in the questions folder ``root``."""
    from backprop_traps.grader.loading.questions import solution_notebooks
    notebooks = solution_notebooks(root)
    if question not in notebooks:
        raise UnknownQuestion(f"unknown question {question!r}; the questions are: "
                              f"{', '.join(notebooks) or 'none'} (`grade list` describes them).")
    source, problems = read_notebook(notebooks[question])
    if source is None:
        raise UnknownQuestion(f"{question} has no interview to rehearse ({'; '.join(problems)}).")
    return Rehearsal(question, notebooks[question].name[:2], parse(source))


def rehearsable(root: Path) -> list[str]:
    """The questions that have key points to rehearse, in order."""
    from backprop_traps.grader.loading.questions import solution_notebooks
    found = []
    for qid, notebook in solution_notebooks(root).items():
        source, _ = read_notebook(notebook)
        if source is not None and parse(source).key_points:
            found.append(qid)
    return found


def read_answer(path: str, stdin) -> str:
    """The answer in ``path`` (``-`` is ``stdin``) as text; ``AnswerTooLong`` past
    ``MAX_ANSWER_BYTES`` (at most one byte more is read: a 1 GB file is refused by its size
    before any of it is), ``bounded.Unreadable`` when ``path`` cannot be read the bounded way
    (both are ValueErrors)."""
    if path == "-":
        data = stdin.buffer.read(MAX_ANSWER_BYTES + 1) if hasattr(stdin, "buffer") else stdin.read(MAX_ANSWER_BYTES + 1)
        size = len(data) if isinstance(data, bytes) else answer_size(data)
        if size > MAX_ANSWER_BYTES:
            raise too_long("the answer on stdin")
    else:  # the one bounded way (loading/bounded.py): no link, no FIFO, never past the cap
        from backprop_traps.grader.loading import bounded
        try:
            data = bounded.read_bytes(path, MAX_ANSWER_BYTES)
        except bounded.Unreadable as e:
            if e.too_big:
                raise too_long(Path(path).name) from None
            raise
    return data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data


def check(rehearsal: Rehearsal, answer: str) -> dict:
    """The contract's object for ``grade interview ID --answer FILE --json``. Each point also
    carries ``evidence`` (the words of the answer that say it, or null) and ``why_not`` (when
    it is not hit: why, with the words that came closest, or that nothing said it)."""
    it = rehearsal.interview
    verdicts = keypoints.check(it.key_points, answer, it.question)
    return {"question": rehearsal.question, "hit": sum(v.hit for v in verdicts), "of": len(verdicts),
            "points": [{"point": v.point, "hit": v.hit, "evidence": v.evidence, "why_not": v.why_not}
                       for v in verdicts],
            "wrong_answer": it.wrong, "hired_answer": it.hired,
            "follow_ups": [{"question": q, "answer": a} for q, a in it.follow_ups]}


def today() -> str:
    """Today's date, ISO (``BACKPROP_TRAPS_NOW`` when set: grader/learner/review.py)."""
    from backprop_traps.grader.learner.review import now
    return now().date().isoformat()


def _block(text: str, indent: str = "  ") -> str:
    return textwrap.fill(text, WIDTH, initial_indent=indent, subsequent_indent=indent)


def _yes_no(ask, prompt: str, default: bool) -> bool:
    """y or n; Enter (or the end of input) takes ``default``."""
    for _ in range(5):
        reply = ask(prompt)
        if reply is None or not reply.strip():
            return default
        word = reply.strip().lower()
        if word in ("y", "yes"):
            return True
        if word in ("n", "no"):
            return False
    return default


def evidence_line(point: dict) -> str:
    """What the answer said for one point of ``check``'s result, for a person."""
    if point["hit"]:
        return f"you said: «{inert(point['evidence'])}»"
    return f"not counted: {inert(point['why_not'] or 'nothing in the answer says it')}"


def report(result: dict, number: str) -> str:
    """``check``'s result for a person: the checklist, the two answers, the follow-ups."""
    lines = [f"{result['question']} · question {number}: {result['hit']}/{result['of']} key points "
             "found in your answer", ""]
    for p in result["points"]:
        lines.append(f"  [{'x' if p['hit'] else ' '}] {p['point']}")
        lines.append(f"        {evidence_line(p)}")
    lines += ["", "The wrong answer most candidates give:", _block(result["wrong_answer"]), "",
              "The answer that gets you hired:", _block(result["hired_answer"]), "", "Follow-ups:"]
    for f in result["follow_ups"]:
        lines += [_block(f["question"]), _block(f["answer"], "      ")]
    return "\n".join(lines)


def rehearse(rehearsal: Rehearsal, ask, say, record) -> tuple[int, int]:
    """The interactive rehearsal. ``record(hit, of)`` is called once the checklist is ticked
    (before the answers are shown, so leaving early still keeps the score)."""
    it = rehearsal.interview
    say(f"{rehearsal.question} · question {rehearsal.number} · the interview\n")
    say(_block(it.question, "") + "\n")
    say("Answer aloud, or type your answer here; an empty line ends it.")
    typed, size = [], 0
    while True:
        line = ask("> ")
        if line is None or not line.strip():
            break
        size += answer_size(line) + 1
        if size <= MAX_ANSWER_BYTES:  # the one cap of an answer: past it, it counts as none
            typed.append(line)
    if size > MAX_ANSWER_BYTES:
        say(f"{too_long('Your answer')}, and counts as no answer.")
        typed = []
    verdicts = keypoints.check(it.key_points, "\n".join(typed), it.question)
    ticked = []
    if it.key_points:
        say("\n" + _block("Did your answer say each of these? y or n; Enter takes the capital letter"
                          + (" (points found in what you typed are pre-ticked, with the words that"
                             " said them: judge them yourself)." if typed else "."), ""))
        for n, verdict in enumerate(verdicts, 1):
            say(f"  {n}/{len(verdicts)}  {verdict.point}")
            if typed:
                say("       " + evidence_line({"hit": verdict.hit, "evidence": verdict.evidence,
                                              "why_not": verdict.why_not}))
            ticked.append(_yes_no(ask, "       [Y/n] " if verdict.hit else "       [y/N] ", verdict.hit))
        hit, of = sum(ticked), len(ticked)
        say(f"\nChecklist: {hit}/{of} key points.")
        record(hit, of)
    else:
        hit, of = 0, 0
        say("\nThis question has no key points yet: nothing to tick or record.")
    say("\nThe wrong answer most candidates give:\n" + _block(it.wrong))
    say("\nThe answer that gets you hired:\n" + _block(it.hired))
    if it.follow_ups:
        say(f"\nFollow-ups ({len(it.follow_ups)}): answer each aloud, then press Enter to see ours.")
    for n, (question, answer) in enumerate(it.follow_ups, 1):
        say(f"\n  {n}/{len(it.follow_ups)}  " + _block(question, "").replace("\n", "\n        "))
        ask("        (Enter) ")
        say(_block(answer, "        "))
    return hit, of
