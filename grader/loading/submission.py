"""Reading a learner's submission: a notebook or a ``.py`` file, and which question it answers.

Every way a file can be unusable becomes ``Submission.error``, one sentence, never a
traceback: unreadable, not UTF-8, empty, broken JSON, not a notebook, no question.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from grader.loading.notebook import NotebookError, graded_cells, graded_code, notebook_question, parse_notebook

_QUESTION_LINE = re.compile(r"^#\s*question:\s*([A-Za-z0-9_]+)\s*$", re.MULTILINE)


@dataclass
class Submission:
    path: str
    source: str = ""
    """All the graded code as one text (a notebook's cells joined, IPython syntax commented out)."""
    question: str | None = None
    error: str | None = None
    cells: list | None = None
    """A notebook's graded cells, ``(label, source, fallback)`` (``grader.loading.notebook.graded_cells``),
    loaded one by one; None for a ``.py`` file, which loads as one piece."""


def load_submission(path: str | Path, question: str | None = None) -> Submission:
    """Read ``path``; ``question`` (the ``--question`` flag) wins over what the file says."""
    path = Path(path)
    sub = Submission(str(path), question=question)
    try:
        raw = path.read_bytes()
    except IsADirectoryError:
        sub.error = f"{path} is a folder, not a notebook or .py file"
        return sub
    except OSError as e:
        sub.error = f"cannot read {path}: {e.strerror or e}"
        return sub
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        sub.error = (f"{path.name} is not UTF-8 text (bad byte at position {e.start}); "
                     "save it as UTF-8 and grade again")
        return sub
    if not text.strip():
        sub.error = f"{path.name} is empty"
        return sub
    if path.suffix == ".ipynb":
        try:
            nb = parse_notebook(text)
        except NotebookError as e:
            sub.error = f"{path.name}: {e}"
            return sub
        sub.source = graded_code(nb)
        sub.cells = graded_cells(nb)
        sub.question = question or notebook_question(nb)
    elif path.suffix == ".py":
        sub.source = text
        found = _QUESTION_LINE.search(text)
        sub.question = question or (found.group(1) if found else None)
    else:
        sub.error = f"{path.name} is neither a notebook (.ipynb) nor a Python file (.py)"
    return sub
