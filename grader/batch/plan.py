"""What a batch still has to grade, and how each result is recorded: shared by the local
runner and the Dask runner, so both write the same files in the same way."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from backprop_traps.grader.batch.grading import question_in_file, make_spec, max_score
from backprop_traps.grader.batch.layouts import Job, submitted_at
from backprop_traps.grader.batch.store import GRADED, ResultStore, file_digest, replay_command
from backprop_traps.grader.batch.variants import student_seed
from backprop_traps.grader.engine.draws import new_draw
from backprop_traps.grader.sandbox.limits import Limits

_LIMIT_FLAGS = {"call_seconds": "--call-timeout", "total_seconds": "--total-timeout",
                "memory_mb": "--memory-mb", "code_seconds": "--code-timeout"}


@dataclass
class Pending:
    """A submission still to grade, with its seed and the hash of the file as it is now."""
    job: Job
    seed: int
    digest: str | None
    question: str | None = None
    """The question it answers (the layout's, else the file's), part of its seed."""
    draw: str | None = None
    """The value drawn for its grading (engine/draws.py); None when it is not graded."""


@dataclass
class Batch:
    """One class's batch: its submissions, where results go, and how they are graded."""
    jobs: list[Job]
    store: ResultStore
    limits: Limits = Limits()
    root: str | None = None
    secret: str | None = None
    default_seed: int = 1234
    force: bool = False
    students: frozenset = frozenset()
    """Students to regrade in place (``--student``)."""

    def seed(self, job: Job, question: str | None) -> int:
        """The course seed of ``job``: its student, its assignment and its question."""
        return student_seed(self.secret, job.student, self.default_seed, assignment=job.assignment,
                            question=question or "")

    def question(self, job: Job) -> str | None:
        """The question ``job`` answers: the layout's, else what the file names (read the
        bounded way, never run), when it is a known id."""
        return job.question or (None if job.error else question_in_file(str(job.path), self.root))

    def pending(self) -> list[Pending]:
        """The submissions without a finished result (all of them with ``force``).
        Those refused before grading (a symbolic link) are recorded here and then."""
        todo = []
        for job in self.jobs:
            question = self.question(job)
            seed, digest = self.seed(job, question), (None if job.error else file_digest(job.path))
            if digest is None and not job.error:  # it changed, vanished or refused reading since
                job = dataclasses.replace(job, error=f"{job.rel} could not be read (it vanished, is "
                                                     "unreadable, or is no longer a regular file)")
            if not self.regrades(job) and self.store.done(job, seed, digest):
                continue
            if job.error:  # a draw all the same: its report names the run by a token, never the seed
                self.record(Pending(job, seed, digest, question, new_draw()), {
                    "result": {"submission": str(job.path), "question": job.question, "score": 0.0,
                               "max_score": max_score(job.question, self.root), "error": job.error,
                               "tests": [], "seed": seed},
                    "status": GRADED, "isolation": "", "seconds": 0.0})
                continue
            todo.append(Pending(job, seed, digest, question, new_draw()))
        return todo

    def regrades(self, job: Job) -> bool:
        """Whether ``job`` is graded again even when its result is up to date."""
        return self.force or job.student in self.students

    def spec(self, item: Pending, with_content: bool = False) -> dict:
        return make_spec(item.job.path, item.job.question, item.seed, self.limits, self.root,
                         with_content=with_content, draw=item.draw)

    def record(self, item: Pending, record: dict) -> Path:
        """Write one submission's result and its sidecar (atomically, result last)."""
        job = item.job
        meta = {"student": job.student, "file": job.rel, "question_from_layout": job.question,
                "seed": item.seed, "seeded_by": "course secret" if self.secret else "default seed",
                "draw": item.draw, "token": self.token(item),
                "replay": replay_command(job, item.seed, self.limit_flags(), self.root, item.draw),
                "replay_by_token": self.token_command(item),
                "sha256": item.digest, "submitted_at": submitted_at(job.path), "status": record.get("status"),
                "isolation": record.get("isolation", ""), "seconds": record.get("seconds"),
                "untouched_stub": bool(record.get("untouched_stub"))}
        return self.store.write(job, record["result"], meta)

    def token(self, item: Pending) -> str | None:
        """The replay token a student's report shows instead of the seed (replay_token.py)."""
        if item.draw is None:
            return None
        from backprop_traps.grader.batch import replay_token
        return replay_token.make(self.secret, replay_token.Replay(
            item.job.student, item.job.assignment, item.question or "", item.draw))

    def token_command(self, item: Pending) -> str | None:
        """`grade replay TOKEN FILE ...`: the replay a report handed back may show (no seed in it)."""
        token = self.token(item)
        if token is None:
            return None
        import shlex
        args = ["grade", "replay", token, str(Path(item.job.path).absolute())] + self.limit_flags()
        return shlex.join(args + (["--questions-dir", str(Path(self.root).absolute())] if self.root else []))

    def limit_flags(self) -> list[str]:
        """The `grade` flags for the limits that differ from the defaults (for replays)."""
        default, flags = Limits(), []
        for name, flag in _LIMIT_FLAGS.items():
            value = getattr(self.limits, name)
            if value != getattr(default, name):
                flags += [flag, f"{value:g}"]
        return flags
