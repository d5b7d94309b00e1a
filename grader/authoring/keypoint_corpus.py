"""A question's adversarial corpus: the answers ``grade validate`` scores against its key points.

One markdown file per question, ``docs/interview_corpus/<id>.md`` in the questions folder
(it travels in the wheel with the other docs). Each answer is a ``## `` section whose heading
says what kind of answer it is; its body, up to the next heading, is the answer as a candidate
says it (a line break is a space, but a line that opens with a bullet or a number starts an
item of a list, as when a candidate types one)::

    # adamw_step: answers that test its key points

    ## keywords
    Bias correction, 1 - beta. Decoupled. eps outside. ...

    ## negated
    m and v do not start at zero, so there is no bias correction ...

    ## trap eps-inside-sqrt
    The update is lr * m_hat / sqrt(v_hat + eps).

    ## paraphrase terse
    m and v start at zero, so ...

The kinds (``KINDS``): ``keywords`` (the key points as a list of words; one section per style,
``## keywords bullets``, ``## keywords lead-in and articles``...), ``negated`` (the
hired answer with its claims negated), ``read-back`` (the question said back; the notebook's own
question is always checked as well), ``trap <trap-id>`` (one per mistake in the solution's
"The mistakes the grader ..." list, stated as the answer, formula and all), ``wrong`` (any
other wrong answer): each must hit fewer than half of the key points. ``paraphrase <style>``
(the hired answer in other words, written without looking at the key points: at least
``MIN_PARAPHRASES``, e.g. terse, rambling, formulas) must each hit at least ``PASS_SHARE``.
Text before the first ``##`` is a comment. Standard library only.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

FOLDER = Path("docs") / "interview_corpus"
UNDER_HALF = ("keywords", "negated", "read-back", "trap", "wrong")
KINDS = UNDER_HALF + ("paraphrase",)
MIN_PARAPHRASES = 3
PASS_SHARE = 0.8
"""A paraphrase must hit at least this share of the key points."""
_HEADING = re.compile(r"^##[ \t]+(.+?)[ \t]*$", re.M)


@dataclass
class Answer:
    """One answer of the corpus."""
    kind: str
    """One of ``KINDS``."""
    label: str
    """What follows the kind in the heading: a trap id, a paraphrase's style; may be empty."""
    text: str
    """The answer, its lines as written (each stripped): a line break reads as a space but
    before a bullet or a number."""

    @property
    def name(self) -> str:
        return f"{self.kind} {self.label}".strip()

    @property
    def must_pass(self) -> bool:
        """True for a paraphrase (at least ``PASS_SHARE``), False for the rest (under half)."""
        return self.kind == "paraphrase"


def path(question: str, root: Path) -> Path:
    """Where ``question``'s corpus lives in the questions folder ``root``."""
    return Path(root) / FOLDER / f"{question}.md"


def parse(text: str) -> tuple[list[Answer], list[str]]:
    """The answers of a corpus file, and what is malformed in it (one sentence each)."""
    answers, problems = [], []
    marks = list(_HEADING.finditer(text))
    for mark, following in zip(marks, marks[1:] + [None]):
        lines = text[mark.end():following.start() if following else len(text)].strip().splitlines()
        body = "\n".join(" ".join(line.split()) for line in lines)  # a line that opens with "- " or "1." is an item
        kind, _, label = mark.group(1).partition(" ")
        kind, label = kind.strip().lower(), label.strip()
        if kind not in KINDS:
            problems.append(f"## {mark.group(1)}: the kind is not one of {', '.join(KINDS)}")
        elif not body:
            problems.append(f"## {mark.group(1)} is empty")
        elif kind == "trap" and not label:
            problems.append("## trap needs the trap id: ## trap <trap-id>")
        else:
            answers.append(Answer(kind, label, body))
    return answers, problems


def find(question: str, root: Path) -> Path | None:
    """The corpus file of ``question``: in the questions folder ``root``, else the kit's own (a
    folder that copies one of the kit's questions proves it with the kit's corpus, as it runs
    the kit's kernels); None when neither has one."""
    from backprop_traps.grader.loading.questions import kit_root
    for folder in (Path(root), kit_root()):
        if path(question, folder).is_file():
            return path(question, folder)
    return None


def load(question: str, root: Path) -> tuple[list[Answer], list[str]] | None:
    """``question``'s corpus (``find``), or None when it has none."""
    where = find(question, root)
    if where is None:
        return None
    try:
        text = where.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        return [], [f"cannot read {where}: {e}"]
    return parse(text)
