"""Whether a handed-in file is the question's stub as released: nothing was attempted.

An untouched stub scores 0 like a wrong answer, but it says something else to an instructor
(the student handed in the wrong file, or never started), so the gradebook's status says it.
The comparison is of text only, code cell by code cell, blank lines and trailing spaces
ignored: nothing of the file is run or parsed as Python here."""
from __future__ import annotations

from pathlib import Path

from backprop_traps.grader.loading.notebook import graded_cells, parse_notebook
from backprop_traps.grader.loading.submission import load_submission


def _lines(sources) -> list[str]:
    out = []
    for source in sources:
        for line in source.splitlines():
            line = line.rstrip()
            if line.strip() and not line.lstrip().startswith("# question:"):
                out.append(line)
    return out


def _stub_lines(question: str, root: str | None) -> list[str] | None:
    from backprop_traps.grader.loading.questions import exercise_path, kit_root, questions_root
    try:
        stub = exercise_path(question, questions_root(root) if root else kit_root())
        return _lines(source for _, source, _ in graded_cells(parse_notebook(stub.read_text(encoding="utf-8"))))
    except Exception:  # noqa: BLE001 -- a question without a stub: nothing to compare with
        return None


def is_untouched_stub(path: str | Path, question: str | None, root: str | None = None) -> bool:
    """True when the graded code of ``path`` is exactly the stub's of ``question``."""
    if not question:
        return False
    stub = _stub_lines(question, root)
    if not stub:
        return False
    try:
        submission = load_submission(path, question)
    except Exception:  # noqa: BLE001 -- unreadable: its result already says so
        return False
    if submission.error:
        return False
    sources = [source for _, source, _ in submission.cells] if submission.cells else [submission.source]
    return _lines(sources) == stub
