"""`grade release`: regenerate exercises/ from solutions/ (nbgrader's preprocessors)."""
import sys

import click


@click.command("release")
@click.argument("question", required=False)
@click.option("--check", is_flag=True, help="Only check: exit 1 if exercises/ is stale.")
@click.option("--questions-dir", type=click.Path(file_okay=False), default=None,
              help="Folder with your own questions (same layout as this repo).")
def release(question, check, questions_dir):
    """Regenerate the stub notebook of QUESTION (default: every question) from its solution."""
    from grader.questions import solution_notebooks, questions_root
    from grader.release import release as run_release

    root = questions_root(questions_dir)
    if question and question not in solution_notebooks(root):
        raise click.BadParameter(f"unknown question {question!r}", param_hint="QUESTION")
    changed = run_release(question, root, check=check)
    if check:
        for qid in changed:
            click.echo(f"stale: {qid}: its exercise (or the solution's nbgrader hidden-checks cell) "
                       "differs from what the solution and checks generate; run `grade release`")
        if changed:
            sys.exit(1)
        click.echo("exercises/ is up to date")
    else:
        click.echo("regenerated: " + (", ".join(changed) if changed else "nothing (already up to date)"))
