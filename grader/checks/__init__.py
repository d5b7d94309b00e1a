"""Hidden checks, one module per question: ``grader/checks/<id>.py`` defines ``QUESTION``.

Instructors who keep questions outside the repo put ``checks/<id>.py`` in their own
questions folder (same layout as this repo); it is loaded by path.
"""
from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

from grader.engine.question import Question


def load_question(question_id: str, root: Path | None = None) -> Question:
    """The registered ``Question`` for ``question_id`` (raises ModuleNotFoundError if none)."""
    if root is not None:
        external = Path(root) / "checks" / f"{question_id}.py"
        if external.is_file():
            spec = importlib.util.spec_from_file_location(f"bpt_checks_{question_id}", external)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module.QUESTION
    return importlib.import_module(f"grader.checks.{question_id}").QUESTION
