"""`grade progress [--plot FILE]`: the learner's progress in this folder (grader/learner/progress.py)."""
from pathlib import Path

import click


@click.command("progress")
@click.option("--plot", "plot_file", metavar="FILE", type=click.Path(dir_okay=False), default=None,
              help="Also draw it into FILE, a PNG: interview scores over time, best code scores.")
@click.option("--questions-dir", type=click.Path(file_okay=False), default=None,
              help="Folder with your own questions (same layout as this repo).")
def progress(plot_file, questions_dir):
    """Show your progress in this folder: questions at full marks out of the total, the
    attempts and hints each took, your interview scores over time, your mock interviews,
    and when each question's code and spoken answer are due for review."""
    from backprop_traps.grader.learner import progress as view
    from backprop_traps.grader.learner.history import History
    from backprop_traps.grader.learner.mock import SECTION
    from backprop_traps.grader.learner.terminal import say  # history text: inert on the terminal
    from backprop_traps.grader.loading import persisted
    from backprop_traps.grader.loading.questions import questions_root, solution_notebooks

    notebooks = solution_notebooks(questions_root(questions_dir))
    if not notebooks:
        say("No questions found.")
        return
    history = History.load()
    mocks = persisted.mock_summaries(history.sections.get(SECTION, []), persisted.SetAside())
    found = view.rows(history, notebooks)
    say(view.table(found, mocks))
    if plot_file:
        target = Path(plot_file)
        if not target.suffix:
            target = target.with_suffix(".png")
        try:
            view.plot(found, target)
        except OSError as e:
            raise click.ClickException(f"cannot write {target}: {e.strerror or e}")
        say(f"\nDrawn into {target}.")
