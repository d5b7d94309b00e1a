"""Reading a learner's submission: a notebook or a ``.py`` file, and which question it answers.

Every way a file can be unusable becomes ``Submission.error``, one sentence, never a
traceback: unreadable, not UTF-8, empty, broken JSON, not a notebook, no question.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from backprop_traps.grader.loading import bounded
from backprop_traps.grader.loading.notebook import NotebookError, graded_cells, graded_code, notebook_question, parse_notebook

_QUESTION_LINE = re.compile(r"^#\s*question:\s*([A-Za-z0-9_]+)\s*$", re.MULTILINE)
MAX_BYTES = 16 * 1024 * 1024
"""Largest submission file read at all (checked before reading): a 210,000-number literal
table is 4 MB; a notebook keeps its outputs, which are not graded (clear them if it is bigger)."""
MAX_JSON_VALUES = 2_000_000
"""Most JSON values (an upper bound, counted before parsing) in a notebook: bounds the
objects the grader builds from it (two million empty lists are about 130 MB)."""


@dataclass
class Submission:
    path: str
    source: str = ""
    """All the graded code as one text (a notebook's cells joined, IPython syntax commented out)."""
    question: str | None = None
    error: str | None = None
    cells: list | None = None
    """A notebook's graded cells, ``(label, source, fallback)`` (``backprop_traps.grader.loading.notebook.graded_cells``),
    loaded one by one; None for a ``.py`` file, which loads as one piece."""
    notebook: dict | None = None
    """The notebook as parsed here, once per grading: its visible tests and its manually graded
    cells are read from it (engine/visible_tests.py), never from the file again. None for a
    ``.py`` file or a file that could not be read."""

    @property
    def fingerprint(self) -> str:
        """A hash of what is graded (``source``): grading the same answer again is not a new
        attempt, and saving a notebook's outputs changes nothing graded."""
        import hashlib
        return hashlib.sha256(self.source.encode("utf-8")).hexdigest()


def load_submission(path: str | Path, question: str | None = None) -> Submission:
    """Read ``path``; ``question`` (the ``--question`` flag) wins over what the file says."""
    path = Path(path)
    sub = Submission(str(path), question=question)
    try:  # the one bounded way (loading/bounded.py): no link, no FIFO, the size cap first
        raw = bounded.read_bytes(path, MAX_BYTES)
    except bounded.Unreadable as e:
        sub.error = _unreadable(path, e)
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
        why = bounded.json_shape_error(text, max_values=MAX_JSON_VALUES)
        if why is not None and "values" in why:
            sub.error = (f"{path.name} holds more than {MAX_JSON_VALUES:,} JSON values, far more than a "
                         "notebook's code needs: clear its outputs and grade again")
            return sub
        if why is not None:
            sub.error = f"{path.name} is not a notebook we can read: {why}; re-save it from Jupyter"
            return sub
        try:
            nb = parse_notebook(text)
        except NotebookError as e:
            sub.error = f"{path.name}: {e}"
            return sub
        sub.source = graded_code(nb)
        sub.cells = graded_cells(nb)
        sub.notebook = nb
        sub.question = question or notebook_question(nb)
    elif path.suffix == ".py":
        sub.source = text
        found = _QUESTION_LINE.search(text)
        sub.question = question or (found.group(1) if found else None)
    else:
        sub.error = f"{path.name} is neither a notebook (.ipynb) nor a Python file (.py)"
    return sub


def _unreadable(path: Path, e: "bounded.Unreadable") -> str:
    """The sentence for a submission the bounded reader refused."""
    text = str(e)
    if e.missing:
        return f"cannot read {path}: No such file or directory"
    if "is a folder" in text:
        return f"{path} is a folder, not a notebook or .py file"
    if " MB, over the " in text:
        return text.replace("it may be", "a submission may have (clear a notebook's outputs)")
    if "symbolic link" in text:
        return (f"{path.name} is a symbolic link, which the grader does not follow: grade the file "
                f"it points to ({os.path.realpath(path)})")
    return text


def read_notebook(path: str | Path) -> dict:
    """A learner's notebook file, read and parsed under the submission's bounds (the bounded
    reader, the size cap, the JSON depth and value caps): a dict, or ``ValueError`` (
    ``bounded.Unreadable`` or ``NotebookError``) with a sentence."""
    text = bounded.read_text(path, MAX_BYTES, encoding="utf-8-sig")
    why = bounded.json_shape_error(text, max_values=MAX_JSON_VALUES)
    if why is not None:
        raise NotebookError(f"the notebook is not usable JSON: {why}")
    return parse_notebook(text)
