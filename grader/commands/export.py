"""`grade export`: a batch's grades as a CSV an LMS imports (the engine: grader/batch/export.py)."""
import click


@click.command("export")
@click.argument("outdir", type=click.Path(file_okay=False, exists=True))
@click.option("--format", "fmt", type=click.Choice(["csv", "canvas", "moodle"]), default="csv", show_default=True,
              help="csv: the kit's columns; canvas / moodle: their gradebook CSV import.")
@click.option("--due", metavar="DATETIME",
              help="Due date (ISO 8601, e.g. 2026-03-01T17:00+01:00; UTC without a zone): adds `late`.")
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False),
              help="Write here instead of printing.")
@click.option("--questions-dir", type=click.Path(file_okay=False), default=None,
              help="Folder with your own questions (as for `grade batch`).")
@click.option("--roster", type=click.Path(dir_okay=False, exists=True), default=None,
              help="The class list (one student id per line, or a CSV whose first column holds "
                   "them): students on it who handed in nothing get a row marked missing.")
def export(outdir, fmt, due, output, questions_dir, roster):
    """One row per student of the batch in OUTDIR: points and maximum per question, the
    total, the maximum and the percentage (and `late` with --due), and a status that says
    why a 0 is a 0 (could not grade, missing, untouched stub). Every flagged student is
    also named on the terminal."""
    import sys
    from pathlib import Path

    from backprop_traps.grader.batch.export import export_table
    from backprop_traps.grader.batch.gradebook import _shown
    from backprop_traps.grader.batch.status import flagged_lines, read_roster
    from backprop_traps.grader.batch.layouts import parse_time
    from backprop_traps.grader.batch.store import atomic_write
    from backprop_traps.grader.loading.questions import kit_root, questions_root, solution_notebooks

    if not (Path(outdir) / "results").is_dir():
        raise click.UsageError(f"{outdir} holds no batch results (no results/ folder): give the -o "
                               "folder of a `grade batch` run")
    when = None
    if due:
        try:
            when = parse_time(due)
        except ValueError:
            raise click.BadParameter(f"{due!r} is not a date and time such as 2026-03-01T17:00",
                                     param_hint="--due")
    own = list(solution_notebooks(questions_root(questions_dir))) if questions_dir else []
    known = own + [q for q in solution_notebooks(kit_root()) if q not in own]
    names = []
    if roster:
        try:
            names = read_roster(roster)
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--roster")
    text, rows = export_table(Path(outdir), known, fmt, when, names)
    if output:
        atomic_write(Path(output), text)
    else:
        click.echo(text, nl=False)
    flagged = flagged_lines(rows, _shown)
    # on the instructor's terminal only: a CSV on stdout stays exactly the CSV for whatever
    # reads it (a pipe, a test harness that merges the two streams)
    # (sys.stderr itself: Click 9 removes click's text-stream getter)
    if flagged and (output or sys.stderr.isatty()):
        click.echo(f"{len(flagged)} of {len(rows)} students flagged (the status column says the same):", err=True)
        for line in flagged:
            click.echo(f"  {line}", err=True)
    if output:
        click.echo(f"wrote {output}", err=True)
