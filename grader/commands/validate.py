"""`grade validate`: prove questions sound (the solution passes, wrong answers fail)."""
import os
import sys

import click

from backprop_traps.grader.commands.options import SEED


@click.command("validate")
@click.argument("questions", nargs=-1)
@click.option("--quick", is_flag=True,
              help="Skip the slow steps: running the notebooks in a kernel and the kernel tests.")
@click.option("--seed", type=SEED, default=None, help="Seed of the hidden inputs (default: grade's).")
@click.option("--questions-dir", type=click.Path(file_okay=False), default=None,
              help="Folder with your own questions (same layout as this repo); "
                   "or set BACKPROP_TRAPS_QUESTIONS.")
def validate(questions, quick, seed, questions_dir):
    """Prove QUESTIONS (default: every question) sound: the solution gets full marks, the
    stub 0; every trap's wrong answer loses points and is named; no check passes zeros or
    an ignored upstream gradient; the stub is fresh and leaks nothing; the key points are
    hit by the hired answer, not by the wrong one; both notebooks run in
    a kernel; the kernels agree with the solution. Exits 1 on any problem."""
    from backprop_traps.grader.authoring.validate import validate as run_validate
    from backprop_traps.grader.engine.run import DEFAULT_SEED
    from backprop_traps.grader.loading.questions import questions_root, solution_notebooks

    root = questions_root(questions_dir)
    known = solution_notebooks(root)
    unknown = [q for q in questions if q not in known]
    if unknown:
        raise click.BadParameter(f"unknown question {', '.join(map(repr, unknown))}; the questions in "
                                 f"{root} are: {', '.join(known) or 'none'}", param_hint="QUESTIONS")
    if not known:
        raise click.UsageError(f"no questions in {root}: expected solutions/NN_<id>.ipynb")
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    reports = run_validate(questions, root, quick=quick, seed=DEFAULT_SEED if seed is None else seed,
                           on_report=lambda r: click.echo(r.text(color) + "\n", color=color))
    bad = [r.question for r in reports if not r.ok]
    if bad:
        click.echo(f"{len(bad)} of {len(reports)} questions need work: {', '.join(bad)}")
        sys.exit(1)
    click.echo("the question is sound" if len(reports) == 1 else f"all {len(reports)} questions are sound")
