"""Generating the learner's stubs (``exercises/``) from ``solutions/`` with nbgrader.

nbgrader's own preprocessors do the work, in the order ``nbgrader generate_assignment``
runs them: check the cell metadata, lock the read-only cells, replace every
``### BEGIN SOLUTION`` … ``### END SOLUTION`` region with ``raise NotImplementedError()``,
drop hidden tests and outputs, and record checksums so an nbgrader course can spot edited
test cells. Notebook metadata (the question id) is kept. Before them the stub layout
(``backprop_traps.grader.authoring.stub_layout``) drops the derivation and solution-only cells and cuts the
interview cell to its question.

First, each solution's nbgrader hidden-checks cell is brought in line with the question's
checks (``backprop_traps.grader.authoring.nbgrader_cell``): added if missing, its points the full score; and
its "Your derivation" answer cell is added before the first derivation cell if missing.
"""
from __future__ import annotations

from pathlib import Path

from backprop_traps.grader.loading.questions import exercise_path, questions_root, solution_notebooks


def make_stub(solution: Path):
    """The stub notebook (an nbformat node) generated from one solution notebook."""
    import nbformat
    from nbgrader.preprocessors import (CheckCellMetadata, ClearHiddenTests, ClearOutput,
                                        ClearSolutions, ComputeChecksums, LockCells)

    from backprop_traps.grader.authoring.stub_layout import to_stub_layout
    nb = nbformat.read(str(solution), as_version=4)
    question = ((nb.metadata.get("backprop_traps") or {}).get("question")
                or solution.stem.split("_", 1)[-1])
    nb = to_stub_layout(nb, question)  # derivations, mistakes and answers stay in the solution
    resources: dict = {}
    for step in (CheckCellMetadata(), LockCells(), ClearSolutions(), ClearOutput(),
                 ClearHiddenTests(), ComputeChecksums()):
        nb, resources = step.preprocess(nb, resources)
    return nb


def stub_text(solution: Path) -> str:
    """The stub exactly as it is written to ``exercises/``."""
    import nbformat
    return nbformat.writes(make_stub(solution)) + "\n"


def release(question: str | None = None, root: Path | None = None, check: bool = False) -> list[str]:
    """Regenerate the stubs (or, with ``check``, only compare them).

    Returns the questions whose stub was stale (with ``check``) or rewritten.
    """
    root = questions_root(root)
    ids = [question] if question else list(solution_notebooks(root))
    from backprop_traps.grader.authoring.nbgrader_cell import max_score_or_none, sync_cell
    from backprop_traps.grader.authoring.stub_layout import sync_answer_cell
    changed = []
    for qid in ids:
        solution = solution_notebooks(root)[qid]
        cell_stale = sync_cell(solution, qid, max_score_or_none(qid, root), write=not check)
        cell_stale |= sync_answer_cell(solution, qid, write=not check)
        target = exercise_path(qid, root)
        text = stub_text(solution)
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current != text or cell_stale:
            changed.append(qid)
            if not check:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
    return changed
