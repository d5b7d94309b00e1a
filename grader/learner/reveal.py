"""`grade reveal ID`: the solution's derivation, one step per call, after the learner has tried.

The steps are the solution notebook's markdown cells tagged ``derivation``, in order
(grader/learner/derivation.py). How many were shown is kept in this folder's history
(``"revealed"``), so the next call shows the next step; ``--all`` shows every step. The
solution is read as JSON (no nbformat): it is package data in a wheel, like the stubs. Formulas
are written as text a terminal shows (grader/learner/latex_text.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from backprop_traps.grader.learner.derivation import derivation_steps


@dataclass
class Revealed:
    """What one `grade reveal` call shows."""
    question: str
    total: int
    """How many steps the derivation has."""
    steps: list[tuple[int, str]] = field(default_factory=list)
    """(step number from 1, its markdown) for each step shown now; empty when none is left."""
    seen_before: int = 0
    """Steps shown by earlier calls."""


def derivation(question: str, root: Path | None = None) -> list[str]:
    """The markdown of each step of the question's derivation ([] when it has none)."""
    from backprop_traps.grader.loading.notebook import parse_notebook
    from backprop_traps.grader.loading.questions import solution_path
    return derivation_steps(parse_notebook(solution_path(question, root).read_text(encoding="utf-8")))


def reveal(question: str, history, root: Path | None = None, show_all: bool = False) -> Revealed:
    """The next step (every step with ``show_all``), recorded in ``history`` (not saved here)."""
    steps = derivation(question, root)
    seen = min(history.revealed(question), len(steps))
    shown = Revealed(question, len(steps), seen_before=seen)
    if show_all:
        shown.steps = list(enumerate(steps, 1))
    elif seen < len(steps):
        shown.steps = [(seen + 1, steps[seen])]
    if shown.steps:
        history.record_revealed(question, shown.steps[-1][0])
    return shown


def render(shown: Revealed) -> str:
    """The terminal text of one call."""
    q, total = shown.question, shown.total
    if not total:
        return f"{q} has no derivation to reveal yet."
    if not shown.steps:
        return (f"All {total} steps of the {q} derivation are revealed: there is nothing more.\n"
                f"`grade reveal {q} --all` shows them again; `grade interview {q}` rehearses the "
                "spoken answer.")
    from backprop_traps.grader.learner.latex_text import markdown_to_text
    parts = []
    for number, text in shown.steps:  # formulas as text a terminal shows (≈, ᵀ, Wₕₕ), not LaTeX
        parts.append(f"--- {q}: derivation step {number} of {total} ---\n\n{markdown_to_text(text)}")
    last = shown.steps[-1][0]
    if last < total:
        parts.append(f"(Try the next step yourself first; `grade reveal {q}` shows step {last + 1} "
                     f"of {total}, `--all` the rest.)")
    else:
        parts.append(f"(That was the last step. Write the derivation in your own words in the "
                     f"notebook's \"Your derivation\" cell; `grade interview {q}` rehearses it aloud.)")
    return "\n\n".join(parts)


def question_you_are_on(history, known: dict, folder: Path) -> tuple[str, str] | None:
    """The question `grade reveal` with no id shows, and why in a few words: the question
    graded last here that has no full marks yet; else the first whose notebook is in
    ``folder`` without full marks (started, not yet graded); else the first never graded.
    None when every question has full marks (then the learner names one)."""
    from backprop_traps.grader.learner.review import CODE, Review

    def done(qid):
        best = history.best(qid)
        return best is not None and best[1] > 0 and best[0] >= best[1]

    schedule = Review(history)
    graded = [(entry["card"].get("last_review") or "", key.rpartition(":")[0])
              for key, entry in schedule.cards.items() if key.endswith(":" + CODE)]
    for _, qid in sorted(graded, reverse=True):
        if qid in known and not done(qid):
            return qid, "graded last, not yet at full marks"
    for qid, notebook in known.items():
        if not done(qid) and (folder / Path(notebook).name).is_file():
            return qid, f"its notebook {Path(notebook).name} is here"
    for qid in known:
        if history.best(qid) is None:
            return qid, "the first question not started"
    return None
