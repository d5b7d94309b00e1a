"""The console scripts of the Python that runs the kit, first on ``PATH`` (issue 51).

nbgrader starts ``alembic`` (its gradebook's migrations) by name, looked up on ``PATH``. Run as
``<venv>/bin/nbgrader`` or ``<venv>/bin/python -m pytest`` without activating the venv (as IDEs
and CI do), ``PATH`` holds no venv, and the lookup fails or finds another Python's copy. So
wherever the kit is loaded into such a tool (the course's ``nbgrader_config.py`` calls
``configure``, grader/batch/nbgrader_course.py), it puts first the scripts folder of the
running interpreter (beside ``sys.executable``), then its install's and, for a venv made with
``--system-site-packages``, its base Python's, as activating the venv would. Standard library only.
"""
from __future__ import annotations

import os
import sys
import sysconfig


def scripts_folders() -> list[str]:
    """The folders that hold this interpreter's console scripts, most specific first."""
    found = [os.path.dirname(sys.executable), sysconfig.get_path("scripts")]
    if sys.base_prefix != sys.prefix:  # a venv: its base's scripts serve its system site-packages
        found.append(sysconfig.get_path("scripts", vars={"base": sys.base_prefix,
                                                         "platbase": sys.base_exec_prefix}))
    out = []
    for folder in found:
        if folder and os.path.isdir(folder) and folder not in out:
            out.append(folder)
    return out


def with_own_scripts(path: str | None) -> str:
    """``path`` (a ``PATH`` value) with ``scripts_folders()`` in front (taken out of where they
    were), every other entry kept in its order, empty ones dropped."""
    own = scripts_folders()
    rest = [p for p in (path or "").split(os.pathsep) if p and p not in own]
    return os.pathsep.join(own + rest)


def put_own_scripts_first(environ=os.environ) -> None:
    """Set ``environ["PATH"]`` (the process's own by default, which its children inherit)."""
    environ["PATH"] = with_own_scripts(environ.get("PATH"))
