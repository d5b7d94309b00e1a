"""`grade release`: regenerate exercises/ from solutions/ (nbgrader's preprocessors),
docs/interview.md from the solutions' interview cells (grader/authoring/interview.py), and the
runs the kit ships for training_symptoms' default seed (its checks' shipped.py)."""
import sys

import click


@click.command("release")
@click.argument("question", required=False)
@click.option("--check", is_flag=True, help="Only check: exit 1 if exercises/ is stale.")
@click.option("--questions-dir", type=click.Path(file_okay=False), default=None,
              help="Folder with your own questions (same layout as this repo).")
def release(question, check, questions_dir):
    """Regenerate the stub notebook of QUESTION (default: every question) from its solution,
    the revision page docs/interview.md from every solution's interview cell, and the runs
    shipped for training_symptoms' default seed where the code that trains them changed."""
    from backprop_traps.grader.loading.questions import solution_notebooks, questions_root
    from backprop_traps.grader.authoring.release import release as run_release

    root = questions_root(questions_dir)
    if question and question not in solution_notebooks(root):
        raise click.BadParameter(f"unknown question {question!r}", param_hint="QUESTION")
    changed = run_release(question, root, check=check)
    from backprop_traps.grader.authoring.interview import PAGE, problems, sync_page
    page_stale = sync_page(root, write=not check)  # every question's interview cell, on one page
    runs_stale = questions_dir is None and _shipped_runs_stale(write=not check)
    if (root / PAGE.parent).is_dir():  # a folder that keeps the page: say what it lacks
        for line in problems(root):
            click.echo(f"note: {line}", err=True)
    if check:
        for qid in changed:
            click.echo(f"stale: {qid}: its exercise (or the solution's nbgrader hidden-checks cell) "
                       "differs from what the solution and checks generate; run `grade release`")
        if page_stale:
            click.echo(f"stale: {PAGE.as_posix()}: differs from the solutions' interview cells; "
                       "run `grade release`")
        if runs_stale:
            click.echo("stale: training_symptoms' shipped runs (default_runs.npz): not made by its "
                       "runs.py and net.py; run `grade release`")
        if changed or page_stale or runs_stale:
            sys.exit(1)
        click.echo("exercises/ is up to date")
    else:
        changed += [PAGE.as_posix()] if page_stale else []
        changed += ["training_symptoms' shipped runs"] if runs_stale else []
        click.echo("regenerated: " + (", ".join(changed) if changed else "nothing (already up to date)"))


def _shipped_runs_stale(write: bool) -> bool:
    """Whether training_symptoms' shipped runs were stale (made again first, when ``write``)."""
    from backprop_traps.grader.checks import training_symptoms
    if not training_symptoms.shipped_stale():
        return False
    if write:
        training_symptoms.ship_runs()
    return True
