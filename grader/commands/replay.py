"""`grade replay TOKEN FILE`: the instructor turns a student's replay token back into the run."""
import json

import click

from backprop_traps.grader.commands.options import limit_options


@click.command("replay")
@click.argument("token")
@click.argument("submission", type=click.Path(exists=True, dir_okay=False))
@click.option("--secret-file", type=click.Path(dir_okay=False),
              help="File holding the course secret (else BACKPROP_TRAPS_SECRET): the token opens only with it.")
@click.option("--json", "as_json", is_flag=True, help="Print the contract's JSON object, with the seed and the draw.")
@limit_options
@click.option("--questions-dir", type=click.Path(file_okay=False), default=None,
              help="Folder with your own questions (as the course was graded with).")
def replay(token, submission, secret_file, as_json, limits, questions_dir):
    """Replay the course run that a student's report names by its TOKEN (nbgrader's feedback,
    `grade show`) on SUBMISSION, the file they handed in: the same student, assignment,
    question, seed and grading-time draw, so the same inputs, check by check. Only the course
    secret opens a token; the report printed here shows the seed, for you, not the student.
    Nothing is written to this folder's history."""
    from backprop_traps.grader.batch import replay_token
    from backprop_traps.grader.batch.variants import EmptySecret, hide_secret_from_proc, read_secret, student_seed
    from backprop_traps.grader.engine.run import DEFAULT_SEED, grade_path
    from backprop_traps.grader.learner.report import render
    from backprop_traps.grader.sandbox.inert import inert

    try:
        secret = read_secret(None, secret_file)
    except OSError as e:
        raise click.BadParameter(f"cannot read {secret_file}: {e.strerror or e}", param_hint="--secret-file")
    except EmptySecret as e:
        raise click.BadParameter(str(e), param_hint="--secret-file")
    hide_secret_from_proc(secret)
    try:
        run = replay_token.read(secret, token)
    except replay_token.BadToken as e:
        raise click.BadParameter(str(e), param_hint="TOKEN")
    seed = student_seed(secret, run.student, DEFAULT_SEED, assignment=run.assignment, question=run.question)
    result = grade_path(submission, question=run.question or None, seed=seed, limits=limits,
                        root=questions_dir, draw=run.draw)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=1))
        return
    click.echo(f"The run of {inert(run.student, 200)}'s {inert(run.question or '?', 80)}"
               + (f" in {inert(run.assignment, 200)}" if run.assignment else "") + ":\n")
    click.echo(render(result, color=False))
