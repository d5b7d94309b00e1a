"""Reading a learner's submission: a notebook or a ``.py`` file, and which question it answers.

Every way a file can be unusable becomes ``Submission.error``, one sentence, never a
traceback: unreadable, not UTF-8, empty, broken JSON, not a notebook, no question.
"""
from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from backprop_traps.grader.loading.notebook import NotebookError, graded_cells, graded_code, notebook_question, parse_notebook

_QUESTION_LINE = re.compile(r"^#\s*question:\s*([A-Za-z0-9_]+)\s*$", re.MULTILINE)
MAX_BYTES = 16 * 1024 * 1024
"""Largest submission file read at all (checked before reading): a 210,000-number literal
table is 4 MB; a notebook keeps its outputs, which are not graded (clear them if it is bigger)."""
MAX_JSON_VALUES = 2_000_000
"""Most JSON values (an upper bound, counted before parsing) in a notebook: bounds the
objects the grader builds from it (two million empty lists are about 130 MB)."""


def _read_bounded(path: Path) -> bytes:
    """The file's bytes, if it is a regular file of at most ``MAX_BYTES`` (checked on the
    open descriptor, before reading: a FIFO or a device never blocks, a huge file is not read)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(path)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{path.name} is not a regular file")
        if info.st_size > MAX_BYTES:
            raise ValueError(f"{path.name} is {info.st_size / 2**20:.0f} MB, over the {MAX_BYTES >> 20} MB a "
                             "submission may have (clear a notebook's outputs)")
        chunks, left = [], MAX_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:
            raise ValueError(f"{path.name} grew past {MAX_BYTES >> 20} MB while it was read")
        return b"".join(chunks)
    finally:
        os.close(fd)


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


def load_submission(path: str | Path, question: str | None = None) -> Submission:
    """Read ``path``; ``question`` (the ``--question`` flag) wins over what the file says."""
    path = Path(path)
    sub = Submission(str(path), question=question)
    try:
        raw = _read_bounded(path)
    except ValueError as e:
        sub.error = str(e)
        return sub
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
        if text.count("[") + text.count("{") + text.count(",") > MAX_JSON_VALUES:
            sub.error = (f"{path.name} holds more than {MAX_JSON_VALUES:,} JSON values, far more than a "
                         "notebook's code needs: clear its outputs and grade again")
            return sub
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
