"""`grade show OUTDIR STUDENT`: one student's stored reports from a batch, as `grade` prints them."""
import click


@click.command("show")
@click.argument("outdir", type=click.Path(file_okay=False, exists=True))
@click.argument("student")
def show(outdir, student):
    """Print STUDENT's stored reports from the batch in OUTDIR, each with the command that
    replays it. A course run's report carries its replay token and never the seed (it may be
    handed back to the student); `grade replay TOKEN FILE` with the course secret replays it."""
    from pathlib import Path

    from backprop_traps.grader.batch.gradebook import _shown
    from backprop_traps.grader.batch.store import ResultStore
    from backprop_traps.grader.engine.results import CheckResult, GradeResult
    from backprop_traps.grader.learner.report import render
    from backprop_traps.grader.learner.terminal import say  # stored reports: inert on the terminal

    if not (Path(outdir) / "results").is_dir():
        raise click.UsageError(f"{outdir} holds no batch results (no results/ folder)")
    found = [(job, result, meta) for job, result, meta in ResultStore.existing(Path(outdir)).everything()
             if job.student == student]
    if not found:
        raise click.UsageError(f"no results for {_shown(student)} in {outdir}")
    reports = []
    for job, doc, meta in sorted(found, key=lambda f: f[0].rel):
        tests = [CheckResult(name=str(t.get("name", "")), points=float(t.get("points") or 0),
                             max_points=float(t.get("max_points") or 0), passed=bool(t.get("passed")),
                             trap=t.get("trap"), feedback=str(t.get("feedback") or ""),
                             grader_error=bool(t.get("grader_error")))
                 for t in doc.get("tests") or [] if isinstance(t, dict)]
        result = GradeResult(submission=job.rel, question=doc.get("question"),
                             score=float(doc.get("score") or 0), max_score=float(doc.get("max_score") or 0),
                             error=doc.get("error"), tests=tests, seed=doc.get("seed", meta.get("seed")),
                             isolation=str(meta.get("isolation") or ""), memory=str(doc.get("memory") or ""),
                             warnings=[str(w) for w in doc.get("warnings") or []],
                             token=meta.get("token") if isinstance(meta.get("token"), str) else None)
        replay = _replay_line(result, meta, job.student)  # first: it may withhold the seed from the report
        reports.append(render(result, color=False) + "\n  replay: " + replay)
    say("\n\n".join(reports))


def _replay_line(result, meta: dict, student: str) -> str:
    """How the report is replayed, never with a course's seed: a report shown here may be handed
    back to the student, so a run seeded by the course secret is named by its replay token
    (batch/replay_token.py); one without a token (an unreadable file, a result from before
    tokens) is regraded by the batch, which derives the seed from the secret again."""
    from backprop_traps.grader.batch.gradebook import _shown
    secret = meta.get("seeded_by") == "course secret"
    note = " (needs the course secret: --secret-file or BACKPROP_TRAPS_SECRET)" if secret else ""
    if result.token and isinstance(meta.get("replay_by_token"), str):
        return _shown(meta["replay_by_token"]) + note
    if secret:
        result.seed = None  # nor in the report's own score line
        return (f"`grade batch SOURCE -o OUTDIR --student {_shown(student)}` regrades it" + note)
    return _shown(meta.get("replay") or "")
