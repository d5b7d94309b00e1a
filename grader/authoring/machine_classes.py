"""``grade validate``'s proof that a question's solution gets full marks on every machine class
the README's level table names (issue 39), graded as a learner's own practice.

What a machine class changes for grading is the memory meter: a cgroup (tamper-proof), or
without one the practice meter. So a question that measures memory has its solution graded
once per class this machine can be switched into (``BACKPROP_TRAPS_NO_CGROUP``,
``BACKPROP_TRAPS_NO_BWRAP``); a class it cannot give (no bubblewrap here, no cgroup for the
grader, no way to switch Landlock off) is a SKIP line saying so. ``quick`` proves the class most
learners get: bubblewrap without a cgroup.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

from backprop_traps.grader.authoring.findings import FAIL, OK, SKIP, QuestionReport
from backprop_traps.grader.sandbox import bwrap, cgroup

CLASSES = {  # the README's level table, as this machine can be switched into each
    "bubblewrap + cgroup": {},
    "bubblewrap without a cgroup": {cgroup.DISABLE: "1"},
    "no bubblewrap, with a cgroup": {bwrap.FORCE_OFF: "1"},
    "no bubblewrap, no cgroup": {bwrap.FORCE_OFF: "1", cgroup.DISABLE: "1"},
}
QUICK = ("bubblewrap without a cgroup",)


@contextlib.contextmanager
def switched(env: dict):
    """This process as a machine of that class, for the time of the block."""
    saved = {key: os.environ.get(key) for key in (cgroup.DISABLE, bwrap.FORCE_OFF)}
    for key in saved:
        os.environ.pop(key, None)
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def unavailable(name: str) -> str:
    """Why this machine cannot be a machine of class ``name`` ('' where it can)."""
    if "no bubblewrap" not in name and not bwrap.probe()[0]:
        return f"bubblewrap cannot run here ({bwrap.probe()[1]})"
    if "no cgroup" not in name and "without a cgroup" not in name:
        with switched({}):
            version, why = cgroup.available()
        if not version:
            return f"no cgroup for the grader here ({why})"
    return ""


def check_machine_classes(report: QuestionReport, question: str, root: Path, seed: int,
                          quick: bool = False) -> None:
    from backprop_traps.grader.checks import load_question
    from backprop_traps.grader.engine.run import grade_path
    from backprop_traps.grader.loading.questions import solution_path
    try:
        if not load_question(question, root).memory_paths:
            return  # nothing it grades depends on the machine's memory meter
    except Exception:  # noqa: BLE001 (no checks: the grading proof says so)
        return
    proven, failed, skipped = [], [], []
    for name, env in CLASSES.items():
        if quick and name not in QUICK:
            continue
        why = unavailable(name)
        if why:
            skipped.append(f"{name}: {why}")
            continue
        with switched(env):
            result = grade_path(solution_path(question, root), seed=seed, root=root, practice=True)
        if result.error or result.score != result.max_score:
            failed.append(f"{name} ({result.memory or result.isolation}): {result.score:g}/{result.max_score:g}"
                          + "".join(f"; '{t.name}': {t.feedback.splitlines()[0] if t.feedback else 'failed'}"
                                    for t in result.tests if not t.passed) + (f"; {result.error}" if result.error else ""))
        else:
            proven.append(f"{name} ({result.memory})")
    if failed:
        report.add(FAIL, "the solution loses points on a machine class the README names "
                         "(graded as a learner's practice)", failed)
    if proven:
        report.add(OK, "the solution gets full marks as a learner's practice on " + "; ".join(proven))
    if not quick:
        skipped.append("nothing but rlimits (no Landlock): not reproducible on this machine; memory is "
                       "measured there as without bubblewrap and a cgroup (the practice meter)")
    if skipped:
        report.add(SKIP, "machine classes not proven here", skipped)
