"""`grade batch`: grade a whole class's submissions into a results folder and a gradebook."""
import dataclasses
import os
import signal
import sys
import threading

import click

from backprop_traps.grader.commands.options import limit_options



def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


@click.command("batch")
@click.argument("source", required=False)
@click.option("-o", "--output", "outdir", type=click.Path(file_okay=False),
              help="Results folder: one JSON per submission, gradebook.csv, summary.txt, summary.png.")
@click.option("-j", "--jobs", "workers", type=click.IntRange(1, 1024), default=_cores(), show_default=True,
              help="Submissions graded at once (local mode).")
@click.option("--secret-file", type=click.Path(dir_okay=False),
              help="File holding the course secret: each seed is HMAC(secret, student, assignment, question).")
@click.option("--secret", help="The course secret itself (visible in the process list; prefer "
                                "--secret-file or BACKPROP_TRAPS_SECRET).")
@click.option("--force", is_flag=True, help="Grade every submission again, even those already graded.")
@click.option("--scheduler", metavar="ADDRESS",
              help="Run on a Dask cluster (e.g. tcp://10.0.0.5:8786): one task per submission.")
@limit_options
@click.option("--questions-dir", type=click.Path(file_okay=False), default=None,
              help="Folder with your own questions (same layout as this repo).")
@click.option("--seed-of", metavar="STUDENT/[ASSIGNMENT/]QUESTION",
              help="Only print that seed and exit (a run also draws a value: replay with its .run.json).")
@click.option("--student", "students", metavar="ID", multiple=True,
              help="Regrade only this student's submissions, in place (repeatable); the gradebook "
                   "stays the whole class's.")
@click.option("--roster", type=click.Path(dir_okay=False, exists=True), default=None,
              help="The class list (one student id per line, or a CSV whose first column holds "
                   "them): summary.txt then names who handed in nothing at all.")
@click.option("--dry-run", is_flag=True,
              help="Only list which files would be graded as which student and question, and "
                   "which are skipped and why; grade nothing.")
def batch(source, outdir, workers, secret_file, secret, force, scheduler, limits, questions_dir,
          seed_of, students, roster, dry_run):
    """Grade every submission in SOURCE (a folder or a glob) into OUTDIR.

    Layouts: SOURCE/<student>/<files>, nbgrader's submitted/<student>/<assignment>/<notebook>,
    and flat SOURCE/<student>_<question>.ipynb. Results are written as they come; run the
    same command again after an interruption and it goes on where it stopped.
    """
    from backprop_traps.grader.batch.variants import EmptySecret, hide_secret_from_proc, read_secret, student_seed
    from backprop_traps.grader.engine.run import DEFAULT_SEED

    try:
        course_secret = read_secret(secret, secret_file)
    except OSError as e:
        raise click.BadParameter(f"cannot read {secret_file}: {e.strerror or e}", param_hint="--secret-file")
    except EmptySecret as e:
        raise click.BadParameter(str(e), param_hint="--secret-file")
    hide_secret_from_proc(course_secret)  # before any submission runs: see variants.py
    if seed_of is not None:
        student, *assignment, question = seed_of.split("/") if "/" in seed_of else (seed_of, None)
        if question is None:
            raise click.BadParameter("seeds are per student, assignment and question: give STUDENT/QUESTION "
                                     "or STUDENT/ASSIGNMENT/QUESTION", param_hint="--seed-of")
        seed = student_seed(course_secret, student, DEFAULT_SEED, assignment="/".join(assignment),
                            question=question)
        click.echo(seed)
        click.echo("a batch's run also drew a value at grading time: replay it with the command in its "
                   ".run.json, or `grade replay TOKEN FILE` from a report's token", err=True)
        return
    if not source or not (outdir or dry_run):
        raise click.UsageError("grade batch needs SOURCE and -o OUTDIR")
    if limits.code_seconds is None:  # a loop at load time is cut in seconds, not at the load budget
        from backprop_traps.grader.sandbox.limits import BATCH_CODE_SECONDS
        limits = dataclasses.replace(limits, code_seconds=BATCH_CODE_SECONDS)
    if questions_dir:  # grading processes run from "/": a relative folder would name nothing
        questions_dir = os.path.abspath(questions_dir)
    names = []
    if roster:
        from backprop_traps.grader.batch.status import read_roster
        try:
            names = read_roster(roster)
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--roster")
    _run(source, outdir, workers, course_secret, force, scheduler, limits, questions_dir, DEFAULT_SEED,
         frozenset(students), dry_run, names)


def _run(source, outdir, workers, course_secret, force, scheduler, limits, questions_dir, default_seed,
         students=frozenset(), dry_run=False, roster=()):
    from pathlib import Path

    from backprop_traps.grader.batch import gradebook
    from backprop_traps.grader.batch.layouts import LayoutError, find_jobs
    from backprop_traps.grader.batch.needs_a_look import needing_a_look
    from backprop_traps.grader.batch.plan import Batch
    from backprop_traps.grader.batch.store import ResultStore
    from backprop_traps.grader.loading.questions import kit_root, questions_root, solution_notebooks

    own = list(solution_notebooks(questions_root(questions_dir))) if questions_dir else []
    known = own + [q for q in solution_notebooks(kit_root()) if q not in own]
    outdir = Path(outdir) if outdir else None
    try:
        jobs = find_jobs(source, known, exclude=outdir)
    except LayoutError as e:
        raise click.UsageError(str(e))
    if not jobs:
        raise click.UsageError(f"found no submissions (.ipynb or .py files) in {source}")
    if students:
        unknown = sorted(students - {j.student for j in jobs})
        if unknown:
            raise click.UsageError(f"no submissions from {', '.join(map(gradebook.safe_cell, unknown))} "
                                   f"in {source}")
        jobs = [j for j in jobs if j.student in students]
    if dry_run:
        click.echo(_dry_run(jobs, outdir, known), nl=False)
        return
    plan = Batch(jobs, ResultStore(outdir), limits, root=questions_dir, secret=course_secret,
                 default_seed=default_seed, force=force, students=students)
    todo = plan.pending()
    count = len({j.student for j in jobs})
    again = "" if force or students else " (--force grades them again)"
    click.echo(f"{len(jobs)} submissions from {count} students: {len(todo)} to grade, "
               f"{len(jobs) - len(todo)} already graded{again}", err=True)
    recorded, failure = _grade(plan, todo, outdir, workers, scheduler)
    seeds = "per student, from the course secret" if course_secret else f"the default seed {default_seed}"
    written = gradebook.write_all(outdir, jobs, plan.store, known,
                                  header=f"Batch of {source} (seeds: {seeds})", roster=roster)
    click.echo(written["text"], nl=False)
    looks = needing_a_look(gradebook.collect(jobs, plan.store)[0])
    if looks:
        click.echo(f"{len(looks)} submission{'s need' if len(looks) != 1 else ' needs'} a look "
                   f"(timeouts, memory, syntax, grader errors): see the end of {written['summary']}", err=True)
    click.echo("wrote " + ", ".join(str(written[k]) for k in ("gradebook", "summary", "chart") if k in written),
               err=True)
    if failure is not None or recorded < len(todo):
        raise click.ClickException(f"{len(todo) - recorded} submissions have no result yet"
                                   + (f" ({failure})" if failure else "") + "; run the same command again")


def _dry_run(jobs, outdir, known) -> str:
    """What a batch would do with each file, one line each, and nothing graded."""
    from backprop_traps.grader.batch.gradebook import _shown
    from backprop_traps.grader.batch.store import ResultStore
    lines = []
    store = ResultStore.existing(outdir) if outdir else None
    for job in jobs:
        if job.error:
            what = f"skipped: {job.error}"
        else:
            question = job.question or "(the file says)"
            done = store is not None and isinstance(store.load(job)[0], dict)
            what = f"{question}{' (has a result; graded again if it changed)' if done else ''}"
        lines.append("  ".join(_shown(part) for part in (job.student, job.rel, what)))
    skipped = sum(bool(j.error) for j in jobs)
    lines.append(f"{len(jobs)} files from {len({j.student for j in jobs})} students: "
                 f"{len(jobs) - skipped} to grade, {skipped} skipped (nothing was graded: --dry-run)")
    return "\n".join(lines) + "\n"


def _grade(plan, todo, outdir, workers, scheduler):
    """Grade ``todo`` locally or on Dask, with a progress bar on a terminal."""
    from contextlib import nullcontext

    if not todo:
        return 0, None
    previous = _stop_on_sigterm()
    show = sys.stderr.isatty()
    bar = click.progressbar(length=len(todo), label="grading", file=sys.stderr) if show else nullcontext()
    log_path = outdir / "grading-processes.log"
    with bar, open(log_path, "ab") as log:
        update = (lambda item: bar.update(1)) if show else _progress_lines(len(todo))
        try:
            if scheduler:
                try:
                    import distributed  # noqa: F401
                except ImportError:
                    raise click.UsageError("--scheduler needs dask.distributed: "
                                           "pip install 'backprop-traps[dask]'")
                from backprop_traps.grader.batch.dask_runner import run_dask
                return run_dask(plan, todo, scheduler, on_result=update), None
            from backprop_traps.grader.batch.runner import LocalRunner
            runner = LocalRunner(plan, workers, log=log)
            return runner.run(todo, on_result=update), runner.failure
        except KeyboardInterrupt:
            click.echo("\nstopped; the results so far are kept: run the same command again to go on",
                       err=True)
            sys.exit(130)
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
            if log_path.stat().st_size == 0:
                log_path.unlink()


def _stop_on_sigterm():
    """SIGTERM (a job scheduler's time limit) stops the batch as Ctrl-C does: grading
    processes stopped, results kept. Returns the handler to restore (None off the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def interrupt(signum, frame):
        raise KeyboardInterrupt
    return signal.signal(signal.SIGTERM, interrupt)


def _progress_lines(total: int, every: int | None = None):
    """Off a terminal (CI, nohup, a log file): a line every ``every`` submissions and at the
    end, so a long batch shows it is alive."""
    import time
    every = every or max(1, min(50, total // 10))
    start, done = time.monotonic(), [0]

    def update(item):
        done[0] += 1
        if done[0] % every == 0 or done[0] == total:
            rate = done[0] / max(time.monotonic() - start, 1e-9)
            click.echo(f"graded {done[0]}/{total} ({100 * done[0] // total}%, {rate:.2g}/s)", err=True)
    return update
