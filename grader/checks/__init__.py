"""Hidden checks, one per question: ``grader/checks/<id>.py``, or for a question that needs more
than one file the package ``grader/checks/<id>/`` with ``__init__.py`` (defines ``QUESTION`` and
the checks), ``probes.py`` (input builders and probes) and ``traps.py`` (the wrong variants and
how they are recognised), and where the question simulates something of its own, one more module
per such concept (training_symptoms: ``net.py``, the small network; ``runs.py``, the planted runs).

Instructors who keep questions outside the repo put ``checks/<id>.py`` or
``checks/<id>/__init__.py`` in their own questions folder (same layout as this repo); it is
loaded by path.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

from backprop_traps.grader.engine.question import Question


def checks_source(question_id: str, root: Path | None = None) -> Path | None:
    """The file that defines ``QUESTION`` for ``question_id``: the root's own checks first, then
    the kit's; None when neither has one."""
    folders = [Path(root) / "checks"] if root is not None else []
    spec = importlib.util.find_spec("backprop_traps.grader.checks")
    if spec and spec.origin:
        folders.append(Path(spec.origin).parent)
    for folder in folders:
        for candidate in (folder / f"{question_id}.py", folder / question_id / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def _load_external(question_id: str, source: Path):
    """Import an instructor's checks by path; a package's own submodules (``from . import
    probes``) resolve inside its folder."""
    name = f"bpt_checks_{question_id}"
    package = source.name == "__init__.py"
    spec = importlib.util.spec_from_file_location(
        name, source, submodule_search_locations=[str(source.parent)] if package else None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # a package's submodules find their parent here
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def load_question(question_id: str, root: Path | None = None) -> Question:
    """The registered ``Question`` for ``question_id`` (raises ModuleNotFoundError if none)."""
    if root is not None:
        folder = Path(root) / "checks"
        for external in (folder / f"{question_id}.py", folder / question_id / "__init__.py"):
            if external.is_file():
                return _load_external(question_id, external).QUESTION
    return importlib.import_module(f"backprop_traps.grader.checks.{question_id}").QUESTION
