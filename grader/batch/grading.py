"""Grading one submission of a batch, wherever it runs: a local grading process or a Dask
worker. A spec in, a record out, never an exception.

A spec is a plain dict (it crosses a pipe as JSON, or Dask's wire): ``path`` (the name the
result reports), ``file`` (where to read it) or ``content`` + ``name`` (its bytes, for a
cluster without a shared filesystem), ``question`` (from the layout, or None), ``seed``,
``draw`` (the value drawn for this grading: engine/draws.py), ``limits`` (``Limits`` fields)
and ``root`` (a questions folder, or None); ``keep_warm``: the next grading's sandbox starts
while this one is graded (grader/sandbox/warm.py; the local runner's grading processes).
A record is ``{"result": <CONTRACT object>, "status", "isolation", "seconds"}``, and
``"untouched_stub": true`` when the file is the question's stub as released.
"""
from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time
from pathlib import Path

from backprop_traps.grader.batch.store import BROKE_WORKER, GRADED, read_capped
from backprop_traps.grader.sandbox.limits import Limits


def make_spec(path: Path, question: str | None, seed: int, limits: Limits, root: str | None,
              with_content: bool = False, draw: str | None = None) -> dict:
    spec = {"path": str(path), "file": str(Path(path).absolute()), "question": question,
            "seed": seed, "draw": draw, "limits": dataclasses.asdict(limits), "root": root}
    if with_content:
        spec["content"] = read_capped(Path(path))  # None: recorded as unreadable, never read there
        spec["name"] = Path(path).name
    return spec


def grade_job(spec: dict) -> dict:
    """Grade the submission ``spec`` describes; any failure becomes the record's error."""
    from backprop_traps.grader.engine.run import grade_path

    start = time.monotonic()
    scratch = None
    if "content" in spec and spec["content"] is None:
        return failed_record(spec, "the file could not be read when the task was made (it vanished, is "
                                   "unreadable, is no longer a regular file or is over the size cap)")
    try:
        limits = Limits(**spec["limits"])
        target = spec["file"]
        if spec.get("content") is not None:
            scratch = tempfile.mkdtemp(prefix="bpt-batch-")
            target = Path(scratch) / Path(spec["name"]).name
            target.write_bytes(spec["content"])
        result = grade_path(target, question=spec["question"], seed=spec["seed"], limits=limits,
                            root=root_for(spec["question"] or question_in_file(target), spec["root"]),
                            draw=spec.get("draw"), keep_warm=bool(spec.get("keep_warm")),
                            practice=False)  # a course: memory points only from a tamper-proof meter
        result.submission = spec["path"]
        from backprop_traps.grader.batch.untouched import is_untouched_stub
        return {"result": result.to_json(), "status": GRADED, "isolation": result.isolation,
                "seconds": round(time.monotonic() - start, 3),
                "untouched_stub": is_untouched_stub(target, result.question, spec["root"])}
    except Exception as exc:  # noqa: BLE001 -- a batch records every failure, it never stops
        return failed_record(spec, f"internal grader error ({type(exc).__name__}: {exc})",
                             seconds=time.monotonic() - start)
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


def failed_record(spec: dict, message: str, seconds: float = 0.0) -> dict:
    """The record of a submission whose grading broke down: score 0, the reason as error."""
    question = spec["question"] or question_in_file(spec["file"], spec.get("root"))
    return {"result": {"submission": spec["path"], "question": question, "score": 0.0,
                       "max_score": max_score(question, spec.get("root")), "error": message,
                       "tests": [], "seed": spec["seed"], "draw": spec.get("draw")},
            "status": BROKE_WORKER, "isolation": "", "seconds": round(seconds, 3)}


def question_in_file(path: str, root: str | None = None) -> str | None:
    """The question the file itself names (it is only read, never run), when it is a known
    id: a notebook's metadata is the student's to write, and ids become gradebook columns."""
    try:
        from backprop_traps.grader.loading.submission import load_submission
        question = load_submission(path).question
    except Exception:  # noqa: BLE001 -- unreadable: the result's error says enough
        return None
    return question if question in known_questions(root) else None


def known_questions(root: str | None) -> set[str]:
    """The ids a batch can grade: the instructor's own folder's and the kit's."""
    from backprop_traps.grader.loading.questions import kit_root, questions_root, solution_notebooks
    known = set(solution_notebooks(kit_root()))
    if root:
        known |= set(solution_notebooks(questions_root(root)))
    return known


def root_for(question: str | None, root: str | None) -> str | None:
    """The questions folder that holds ``question``: the instructor's own, else the kit's, so a
    class can hand in both."""
    from backprop_traps.grader.loading.questions import questions_root, solution_notebooks
    if root and question and question not in solution_notebooks(questions_root(root)):
        return None
    return root


def max_score(question: str | None, root: str | None) -> float:
    if question is None:
        return 0.0
    try:
        from backprop_traps.grader.checks import load_question
        from backprop_traps.grader.loading.questions import questions_root
        return float(load_question(question, questions_root(root)).max_score)
    except Exception:  # noqa: BLE001 -- unknown question: the result's error says enough
        return 0.0
