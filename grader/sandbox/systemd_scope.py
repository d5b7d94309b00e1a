"""Without root on a systemd machine: the one command that gives grading a cgroup of its own.

A learner's shell sits in a session scope that systemd does not delegate, so the grader finds
no writable cgroup. systemd's user manager (``user@UID.service``) delegates memory and pids to
the units it starts: ``systemd-run --user --scope -p Delegate=yes grade FILE`` runs the grader in
a transient scope it may manage, and ``cgroup_place`` then uses it (its delegation pattern).
"""
from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

PREFIX = ["systemd-run", "--user", "--scope", "-p", "Delegate=yes"]


def user_manager_running() -> bool:
    """Whether this (unprivileged) user has a systemd user manager to ask for a scope."""
    if os.geteuid() == 0 or shutil.which("systemd-run") is None:
        return False
    runtime = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.geteuid()}"
    return (Path(runtime) / "systemd" / "private").exists()


def command(*grade_args: str) -> str:
    """``grade ARGS`` run in a delegated transient scope, as one shell command."""
    return shlex.join(PREFIX + ["grade", *grade_args])


def hint(*grade_args: str) -> str:
    """The sentence that says so, where it would help here (else '')."""
    if not user_manager_running():
        return ""
    return (f"to give grading a cgroup of its own, run it in a delegated systemd scope: "
            f"`{command(*(grade_args or ('FILE',)))}`")
