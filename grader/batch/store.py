"""OUTDIR: one result per submission, written atomically as soon as it exists.

``results/<name>.json`` is the CONTRACT's object, exactly what ``grade --json`` prints;
``results/<name>.run.json`` beside it says how it was made: the student, the seed (with
the command that replays it), a hash of the file graded, and whether grading finished.
The sidecar is written first and the result last, each through a temporary file and
``os.replace``, so a result on disk is always complete and always has its sidecar: a
killed batch leaves whole results or none, and the next run skips exactly those.

``<name>`` comes from the file's path inside SOURCE: letters, digits, ``-``, ``_`` and
``.`` are kept, anything else (``/``, spaces, control characters) becomes ``_``, leading
dots are dropped, and a short hash of the exact path keeps two similar names apart. It
never holds a path separator, so no result can land outside OUTDIR.
"""
from __future__ import annotations

import hashlib
import json
import os
import shlex
import threading
from pathlib import Path

from backprop_traps.grader.batch.layouts import Job

GRADED = "graded"
"""Sidecar status: the grader finished with this file (whatever the score)."""
BROKE_WORKER = "worker-failed"
"""Sidecar status: grading crashed or hung the grading process; retried on the next run."""
GRADER_ERROR = "grader-error"
"""Sidecar status: the grader broke on this file (a check raised, ``"grader_error": true`` in
the result); the result is kept for reading, but it is no grade: retried on the next run."""


def result_name(job: Job) -> str:
    safe = "".join(c if (c.isalnum() or c in "-_.") else "_" for c in job.rel.replace("/", "__"))
    safe = safe.lstrip(".")[:80] or "submission"
    digest = hashlib.sha256(job.rel.encode("utf-8", "surrogateescape")).hexdigest()[:10]
    return f"{safe}-{digest}"


def _chunks(path: Path, cap: int | None):
    """The file's bytes in 1 MB chunks; ValueError when it is not a regular file (a FIFO
    opened here would block), a link, or over ``cap`` bytes; OSError when unreadable."""
    from backprop_traps.grader.batch.layouts import MAX_SUBMISSION_BYTES
    from backprop_traps.grader.loading import bounded
    yield from bounded.chunks(path, MAX_SUBMISSION_BYTES if cap is None else cap)


def file_digest(path: Path, cap: int | None = None) -> str | None:
    """sha256 of the submission (a resubmitted file is graded again), read in chunks; None if
    unreadable, not a regular file, or past ``cap`` bytes."""
    digest = hashlib.sha256()
    try:
        for chunk in _chunks(path, cap):
            digest.update(chunk)
    except (OSError, ValueError):
        return None
    return digest.hexdigest()


def read_capped(path: Path, cap: int | None = None) -> bytes | None:
    """The submission's bytes under the same rules as ``file_digest`` (for a Dask task)."""
    try:
        return b"".join(_chunks(path, cap))
    except (OSError, ValueError):
        return None


def replay_command(job: Job, seed: int, limits_args: list[str], root: str | None = None,
                   draw: str | None = None) -> str:
    """The `grade` command that reproduces this submission's run exactly, from any folder:
    the instructor's, with the seed (it is in OUTDIR only, never in a student's report)."""
    args = ["grade", str(Path(job.path).absolute())] + (["--draw", draw] if draw else []) + \
        ["--seed", str(seed), "--replay"]
    if job.question:
        args += ["--question", job.question]
    if root:
        args += ["--questions-dir", str(Path(root).absolute())]
    return shlex.join(args + limits_args)


def atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    # surrogateescape: a file name that is not valid UTF-8 is written back as its own bytes
    with open(tmp, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class ResultStore:
    """The results folder of one batch."""

    def __init__(self, outdir: Path, create: bool = True):
        self.outdir = Path(outdir)
        self.folder = self.outdir / "results"
        if not create:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        for stale in self.folder.glob(".*.tmp"):  # a killed run's half-written files
            stale.unlink(missing_ok=True)

    @classmethod
    def existing(cls, outdir: Path) -> "ResultStore":
        """The store of an existing OUTDIR, to read only (nothing is created or cleaned)."""
        return cls(outdir, create=False)

    def _paths(self, job: Job) -> tuple[Path, Path]:
        name = result_name(job)
        result, sidecar = self.folder / f"{name}.json", self.folder / f"{name}.run.json"
        assert result.parent == self.folder and sidecar.parent == self.folder
        return result, sidecar

    def done(self, job: Job, seed: int, digest: str | None) -> bool:
        """Graded already, with this seed, from this very file, and without a grader error
        (the grader's fault is no grade): skip it when resuming."""
        result, sidecar = self._paths(job)
        meta, graded = _read_sidecar(sidecar), _read_result(result)
        return (isinstance(meta, dict) and meta.get("status") == GRADED and meta.get("seed") == seed
                and meta.get("sha256") == digest and isinstance(graded, dict)
                and not graded.get("grader_error"))

    def write(self, job: Job, result: dict, meta: dict) -> Path:
        """Record one submission's result: the sidecar first, the result last (ASCII JSON,
        so names that are not valid UTF-8 survive as escapes)."""
        result_path, sidecar = self._paths(job)
        if isinstance(result, dict) and result.get("grader_error") and meta.get("status") == GRADED:
            meta = {**meta, "status": GRADER_ERROR}  # never recorded as graded
        atomic_write(sidecar, json.dumps(meta, indent=1) + "\n")
        atomic_write(result_path, json.dumps(result, indent=1) + "\n")
        return result_path

    def everything(self) -> list[tuple[Job, dict, dict]]:
        """Every (job, result, sidecar) in the folder, whichever run wrote it: the gradebook is
        always the whole class's, even after a run that regraded one student."""
        found = []
        for sidecar in sorted(self.folder.glob("*.run.json")):
            meta = _read_sidecar(sidecar)
            result = _read_result(sidecar.with_name(sidecar.name[: -len(".run.json")] + ".json"))
            if not (isinstance(meta, dict) and isinstance(result, dict)):
                continue
            student, rel = str(meta.get("student", "")), str(meta.get("file", ""))
            question = meta.get("question_from_layout")
            job = Job(student=student, path=Path(rel), rel=rel,
                      question=question if isinstance(question, str) else None)
            found.append((job, result, meta))
        return found

    def load(self, job: Job) -> tuple[dict | None, dict | None]:
        """(result, sidecar) of ``job``, None where missing or unreadable."""
        result, sidecar = self._paths(job)
        return _read_result(result), _read_sidecar(sidecar)


RESULT_BYTES = 64 * 1024 * 1024
"""A stored result or sidecar larger than this is not read (one is a few KB)."""


def _read_json(path: Path):
    """A stored result, read the one bounded way (loading/bounded.py); None when it cannot be."""
    from backprop_traps.grader.loading import bounded
    try:
        return bounded.read_json(path, RESULT_BYTES)
    except bounded.Unreadable:
        return None


_TOLD: set[str] = set()


def _checked(path: Path, schema):
    """The file's JSON through its schema (grader/loading/persisted.py); None when it is missing,
    unreadable or fails (then one sentence on stderr says so, once): a result with a text score
    or an infinite one is left out of the gradebook and graded again, never computed with."""
    import sys
    from backprop_traps.grader.loading import persisted
    raw = _read_json(path)
    if raw is None:
        return None
    try:
        return schema(raw)
    except persisted.Invalid as why:
        sentence = f"{path.name} is not what the batch writes ({why}): it is left out, and graded again next run."
        if sentence not in _TOLD:
            _TOLD.add(sentence)
            print(sentence, file=sys.stderr)
        return None


def _read_result(path: Path):
    from backprop_traps.grader.loading.persisted import batch_result
    return _checked(path, batch_result)


def _read_sidecar(path: Path):
    from backprop_traps.grader.loading.persisted import batch_sidecar
    return _checked(path, batch_sidecar)
