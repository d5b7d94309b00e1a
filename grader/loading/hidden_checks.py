"""Finding and loading a question's hidden checks by id: the kit's ``grader/checks/<id>``, or
an instructor's own questions folder's ``checks/<id>.py`` / ``checks/<id>/__init__.py``, loaded
by path. Here, below the engine that grades with them, so the engine never reaches up into
the checks room to find one (``grader/checks/__init__.py`` re-exports these names)."""
from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path


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


def load_question(question_id: str, root: Path | None = None):
    """The registered ``Question`` (grader/engine/question.py) for ``question_id`` (raises
    ModuleNotFoundError if none)."""
    if root is not None:
        folder = Path(root) / "checks"
        for external in (folder / f"{question_id}.py", folder / question_id / "__init__.py"):
            if external.is_file():
                return _load_external(question_id, external).QUESTION
    return importlib.import_module(f"backprop_traps.grader.checks.{question_id}").QUESTION
