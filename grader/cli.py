"""The ``grade`` command. It only parses arguments and calls the engine.

``grade SUBMISSION...`` grades; everything else is a subcommand (``grade --help``).
"""
from __future__ import annotations

import json
import os
import sys

import click

from grader.commands import batch, bench, learner, new, release, validate
from grader.commands.options import limit_options



class _DefaultToCheck(click.Group):
    """``grade FILE...`` means ``grade check FILE...``: the learner's command stays short."""

    def parse_args(self, ctx, args):
        first = next((a for a in args if not a.startswith("-")), None)
        if args and args not in (["--help"], ["-h"]) and first not in self.commands:
            args = ["check", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_DefaultToCheck, context_settings={"help_option_names": ["-h", "--help"]})
def main():
    """Grade backprop-trap answers: `grade SUBMISSION...` runs the hidden checks on a
    notebook (.ipynb) or Python file (.py) and says what is wrong and why."""


@main.command("check")
@click.argument("submissions", nargs=-1, required=True, type=click.Path())
@click.option("--question", "-q", help="Question id, if the file does not say (wins over the file).")
@click.option("--seed", type=int, default=None, help="Seed of the hidden inputs (printed; replays a run).")
@click.option("--json", "as_json", is_flag=True, help="Print exactly one JSON document (CONTRACT.md).")
@click.option("--hint", is_flag=True, help="Also show the next unseen hint for the first failing check.")
@limit_options
@click.option("--questions-dir", type=click.Path(file_okay=False), default=None,
              help="Folder with your own questions (same layout as this repo); "
                   "or set BACKPROP_TRAPS_QUESTIONS.")
def check(submissions, question, seed, as_json, hint, limits, questions_dir):
    """Grade SUBMISSIONS (notebooks or .py files) against the hidden checks.

    Your best score and the hints you have seen are kept in this folder's
    .backprop_traps_history.json (not with --json)."""
    from grader.engine import grade_path  # imported here so `grade --help` stays instant

    if hint and as_json:
        raise click.UsageError("--hint shows text for a person; it cannot go with --json")
    results = [grade_path(path, question=question, seed=seed, limits=limits, root=questions_dir,
                          visible_tests=not as_json)
               for path in submissions]
    if as_json:
        docs = [r.to_json() for r in results]
        click.echo(json.dumps(docs[0] if len(docs) == 1 else docs, indent=1))
        return
    from grader.report import render
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    click.echo("\n\n".join(render(r, color) for r in results), color=color)
    follow_up = learner.after_grading(results, hint, color)
    if follow_up:
        click.echo("\n" + follow_up, color=color)


# Subcommands, one module each in grader/commands/.
for _command in (release.release, learner.list_questions, learner.start, new.new, validate.validate,
                 bench.bench, batch.batch):
    main.add_command(_command)
