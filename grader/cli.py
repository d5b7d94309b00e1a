"""The ``grade`` command. It only parses arguments and calls the engine.

``grade SUBMISSION...`` grades; everything else is a subcommand (``grade --help``).
"""
from __future__ import annotations

import json
import os
import sys

import click

from backprop_traps.grader.commands.options import SEED, limit_options

_OWN_OPTIONS = ("--help", "-h", "--version")

SUBCOMMANDS = {
    # name -> "module:attribute" in grader/commands/, imported only when that command runs (or
    # for `grade --help`): the learner's `grade FILE` does not pay for the instructor's commands
    "batch": "backprop_traps.grader.commands.batch:batch", "bench": "backprop_traps.grader.commands.bench:bench",
    "doctor": "backprop_traps.grader.commands.doctor:doctor", "export": "backprop_traps.grader.commands.export:export",
    "interview": "backprop_traps.grader.commands.interview:interview", "list": "backprop_traps.grader.commands.learner:list_questions",
    "mock": "backprop_traps.grader.commands.mock:mock", "next": "backprop_traps.grader.commands.next_due:next_due",
    "progress": "backprop_traps.grader.commands.progress:progress",
    "new": "backprop_traps.grader.commands.new:new", "release": "backprop_traps.grader.commands.release:release",
    "replay": "backprop_traps.grader.commands.replay:replay",
    "reveal": "backprop_traps.grader.commands.reveal:reveal", "show": "backprop_traps.grader.commands.show:show",
    "start": "backprop_traps.grader.commands.learner:start", "validate": "backprop_traps.grader.commands.validate:validate",
}


class _DefaultToCheck(click.Group):
    """``grade FILE...`` means ``grade check FILE...``: the learner's command stays short, and
    ``grade --help`` shows how to grade, with the check's options, before the subcommands.
    The subcommands load lazily (click's documented "lazily loading subcommands" pattern)."""

    def list_commands(self, ctx):
        return sorted({*super().list_commands(ctx), *SUBCOMMANDS})

    def get_command(self, ctx, name):
        if name in SUBCOMMANDS and name not in self.commands:
            from importlib import import_module
            module, attribute = SUBCOMMANDS[name].split(":")
            self.add_command(getattr(import_module(module), attribute), name)
        return super().get_command(ctx, name)

    def parse_args(self, ctx, args):
        first = next((a for a in args if not a.startswith("-")), None)
        if (args and not (len(args) == 1 and args[0] in _OWN_OPTIONS)
                and first not in self.commands and first not in SUBCOMMANDS):
            args = ["check", *args]
        return super().parse_args(ctx, args)

    def format_usage(self, ctx, formatter):
        formatter.write_usage(ctx.command_path, "SUBMISSION... [OPTIONS]")
        formatter.write_usage(ctx.command_path, "COMMAND [ARGS]...", prefix="   or: ")

    def format_options(self, ctx, formatter):
        check = self.commands["check"]
        sub = click.Context(check, info_name="check", parent=ctx)
        rows = [p.get_help_record(sub) for p in check.get_params(sub) if p.name != "help"]
        with formatter.section(f"Grading ({ctx.command_path} SUBMISSION... [OPTIONS])"):
            formatter.write_dl([r for r in rows if r])
        super().format_options(ctx, formatter)


def _version(ctx, _param, value):
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import PackageNotFoundError, version
    try:
        number = version("backprop-traps")
    except PackageNotFoundError:  # run from a folder that was never installed
        number = "unknown (not installed)"
    click.echo(f"grade (backprop-traps) {number}")
    ctx.exit()


@click.group(cls=_DefaultToCheck, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_version,
              help="Show the version and exit.")
def main():
    """Grade backprop-trap answers: `grade SUBMISSION...` runs the hidden checks on a
    notebook (.ipynb) or Python file (.py) and says what is wrong and why.

    \b
    Start here:
      grade list                       the questions, and your best score in this folder
      grade start routing_trap         copy a question's stub notebook into this folder
      grade 01_routing_trap.ipynb      grade it (add --hint when stuck)"""


class _PathError(click.UsageError):
    """A usage error told in one sentence, without the usage block (exit status 2)."""

    def show(self, file=None):
        click.echo(f"Error: {self.format_message()}", err=True)


def _existing_files(_ctx, _param, paths):
    """A path that does not exist, or a folder, is a usage error (exit 2): nothing was graded.
    A notebook named without its extension is found (``grade 19_bptt``); a name close to a
    subcommand or to a file here gets "did you mean"."""
    from backprop_traps.grader.commands.names import did_you_mean, find_submission, nearby_files
    from backprop_traps.grader.sandbox.inert import inert  # a file name may carry anything
    found = []
    for index, path in enumerate(paths):
        if os.path.isdir(path):
            raise _PathError(f"{inert(path)} is a folder: give a notebook (.ipynb) or a .py file in it "
                             "(`grade batch` grades a whole class's folder).")
        real = find_submission(path)
        if real is None and os.path.exists(path):
            real = path  # not a regular file (a FIFO, a device): the engine says why
        if real is None:
            guess = did_you_mean(path, SUBCOMMANDS, lambda name: f"`grade {name}`") if index == 0 else ""
            files = nearby_files(path)
            if not guess and files:
                guess = " Did you mean " + " or ".join(inert(f) for f in files) + "?"
            raise _PathError(f"{inert(path)} does not exist: give the path of a notebook (.ipynb) or a .py file."
                             + guess)
        found.append(real)
    return tuple(found)


def _draw(value):
    """``--draw``: 32 hex digits (engine/draws.py), or a usage error."""
    if value is not None:
        from backprop_traps.grader.engine.draws import is_draw
        if not is_draw(value.lower()):
            raise click.BadParameter("a draw is the 32 hex digits a course run recorded", param_hint="--draw")
        return value.lower()
    return None


def _refuse_during_a_mock(what: str) -> None:
    """Exit with one sentence while a mock interview runs in this folder (grader/learner/mock_clock.py)."""
    from backprop_traps.grader.learner.history import History
    from backprop_traps.grader.learner.mock_clock import refusal
    sentence = refusal(History.load(), what)
    if sentence:
        click.echo(sentence, err=True)
        sys.exit(1)


def _start_sandbox_early(path, limits, questions_dir, practice, draw) -> None:
    """The first submission's sandbox starts booting now, before the engine is even imported:
    its boot is most of what a learner waits for (grader/sandbox/warm.py; the grading takes
    it only if it was started for exactly that grading)."""
    from backprop_traps.grader.engine.draws import is_practice
    from backprop_traps.grader.loading.questions import questions_root
    from backprop_traps.grader.sandbox import warm
    from backprop_traps.grader.sandbox.visibility import submission_hides
    try:
        warm.prepare(limits, submission_hides(questions_root(questions_dir), path), is_practice(practice, draw))
    except Exception:  # noqa: BLE001 (an early start is speed only: the grading starts its own)
        warm.close()


@main.command("check")
@click.argument("submissions", nargs=-1, required=True, type=click.Path(), callback=_existing_files)
@click.option("--question", "-q", help="Question id, if the file does not say (wins over the file).")
@click.option("--seed", type=SEED, default=None, help="Seed of the hidden inputs (printed; replays a run).")
@click.option("--json", "as_json", is_flag=True,
              help="Print exactly one JSON document (docs/contract.md), with its seed.")
@click.option("--hint", is_flag=True, help="Also show the next unseen hint for the first failing check.")
@click.option("--replay", is_flag=True, help="An instructor's replay (the command `grade batch` records): "
                                              "write nothing to this folder's history, and give memory "
                                              "points only from a tamper-proof meter, as the batch does.")
@click.option("--draw", default=None, metavar="HEX", callback=lambda _c, _p, v: _draw(v),
              help="An instructor's replay of a course run: the value it drew at grading time "
                   "(its .run.json has it; `grade replay TOKEN` finds it from a report's token).")
@limit_options
@click.option("--questions-dir", type=click.Path(file_okay=False), default=None,
              help="Folder with your own questions (same layout as this repo); "
                   "or set BACKPROP_TRAPS_QUESTIONS.")
def check(submissions, question, seed, as_json, hint, replay, draw, limits, questions_dir):
    """Grade SUBMISSIONS (notebooks or .py files) against the hidden checks
    (`grade SUBMISSION...` is short for `grade check SUBMISSION...`).

    Your best score and the hints you have seen are kept in this folder's
    .backprop_traps_history.json (not with --json)."""
    from backprop_traps.grader import timeline
    timeline.mark("interpreter, click, the CLI")

    if hint and as_json:
        raise click.UsageError("--hint shows text for a person; it cannot go with --json")
    if not replay:
        _refuse_during_a_mock("a hint" if hint else "grading by hand (the mock grades your code when you type done)")
    # a replay is a course's run: memory points only from a tamper-proof meter, as in the batch
    practice = False if (replay or draw) else None
    _start_sandbox_early(submissions[0], limits, questions_dir, practice, draw)
    from backprop_traps.grader.engine.run import grade_path  # imported here so `grade --help` stays instant
    timeline.mark("import the engine")
    results = [grade_path(path, question=question, seed=seed, limits=limits, root=questions_dir,
                          visible_tests=not as_json, practice=practice, draw=draw,
                          keep_warm=index + 1 < len(submissions))
               for index, path in enumerate(submissions)]
    if as_json:
        docs = [r.to_json() for r in results]
        click.echo(json.dumps(docs[0] if len(docs) == 1 else docs, indent=1))
        timeline.mark("the report")
        return
    from backprop_traps.grader.learner.report import render
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    click.echo("\n\n".join(render(r, color) for r in results), color=color)
    timeline.mark("the report")
    if replay or draw:  # a course run replayed: not this folder's practice
        return
    from backprop_traps.grader.learner.after_grading import after_grading
    follow_up = after_grading(results, hint, color)
    if follow_up:
        click.echo("\n" + follow_up, color=color)
    timeline.mark("the history (best score, hints)")

