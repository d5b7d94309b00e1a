"""The learner's loop: `grade list`, `grade start ID`, and what `grade FILE` does after grading
(remember the best score, offer or show a hint: grader/learner/after_grading.py)."""
from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

import click


def _shown_path(path: Path) -> str:
    """``path`` as the learner would type it from here: relative when below the cwd."""
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else str(path)


def _first_heading(notebook: Path) -> str:
    """The first markdown heading of a notebook, without the #'s (the fallback title)."""
    from backprop_traps.grader.loading.notebook import NotebookError, cell_source, parse_notebook
    try:
        nb = parse_notebook(notebook.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, NotebookError):
        return ""
    for cell in nb["cells"]:
        if isinstance(cell, dict) and cell.get("cell_type") == "markdown":
            for line in cell_source(cell).splitlines():
                if line.startswith("#"):
                    return line.lstrip("#").strip()
    return ""


def _declared(question: str, root: Path) -> tuple[str, str] | None:
    """(title, difficulty) as the checks module writes them in ``QUESTION = Question(id, title,
    ..., difficulty=...)``, read without importing it (imports cost `grade list` its speed);
    None when they are not plain strings there."""
    import ast
    import io
    import tokenize
    from backprop_traps.grader.checks import checks_source
    source = checks_source(question, root)
    try:
        if source is None:
            return None
        text = source.read_text(encoding="utf-8")
        start = text.find("QUESTION = Question(")
        if start < 0 or (start and text[start - 1] != "\n"):
            return None
        statement = text[start:]  # parse that one statement, not the whole module (~20 KB)
        end = next(tok.end for tok in tokenize.generate_tokens(io.StringIO(statement).readline)
                   if tok.type == tokenize.NEWLINE)
        tree = ast.parse("\n".join(statement.splitlines()[:end[0]]))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, tokenize.TokenError, StopIteration):
        return None
    for node in tree.body:
        if (isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == ["QUESTION"]
                and isinstance(node.value, ast.Call) and 2 <= len(node.value.args) <= 4):
            title = node.value.args[1]
            difficulty = {k.arg: k.value for k in node.value.keywords}.get("difficulty", ast.Constant("medium"))
            if all(isinstance(v, ast.Constant) and isinstance(v.value, str) for v in (title, difficulty)):
                return title.value, difficulty.value
    return None


def describe(question: str, solution: Path, root: Path) -> tuple[str, str]:
    """(title, difficulty) from the hidden checks; the notebook's heading if it has none yet."""
    declared = _declared(question, root)
    if declared:
        return declared
    from backprop_traps.grader.checks import load_question
    try:
        q = load_question(question, root)
        return q.title, getattr(q, "difficulty", "medium")
    except Exception:  # no checks module yet, or one being written: the listing still works
        return _first_heading(solution) or "(no description yet)", "medium"


def _derivation_steps(solution: Path) -> int:
    """How many steps the solution's derivation has (what `grade reveal` shows, one a call)."""
    from backprop_traps.grader.learner.derivation import derivation_steps
    from backprop_traps.grader.loading.notebook import NotebookError, parse_notebook
    try:
        return len(derivation_steps(parse_notebook(solution.read_text(encoding="utf-8"))))
    except (OSError, UnicodeDecodeError, NotebookError):
        return 0


def _scores(history, qid: str, solution: Path) -> tuple[str, str, str]:
    """The three score columns of `grade list`: code, interview, derivation."""
    last, best = history.last(qid), history.best(qid)
    code = f"{last[0]:g}/{last[1]:g}, best {best[0]:g}/{best[1]:g}" if last and best else "not graded"
    runs = history.interviews(qid)
    spoken = f"{runs[-1]['hit']}/{runs[-1]['of']}" if runs else "-"
    steps = _derivation_steps(solution)
    revealed = f"{min(history.revealed(qid), steps)}/{steps} shown" if steps else "-"
    return code, spoken, revealed


@click.command("list")
@click.option("--questions-dir", type=click.Path(file_okay=False), default=None,
              help="Folder with your own questions (same layout as this repo).")
def list_questions(questions_dir):
    """List the questions: what each is about, its difficulty, your scores in this folder
    side by side (the last code score with the best, the last interview checklist, the
    derivation steps revealed), and how to start it (or your notebook here, once started)."""
    from backprop_traps.grader.learner.history import FILENAME, History
    from backprop_traps.grader.loading.questions import questions_root, solution_notebooks

    root = questions_root(questions_dir)
    history = History.load()
    notebooks = solution_notebooks(root)
    rows = []
    for qid, solution in notebooks.items():
        title, difficulty = describe(qid, solution, root)
        mine = Path.cwd() / solution.name
        to_open = solution.name if mine.is_file() else f"grade start {qid}"
        rows.append((solution.name[:2], qid, difficulty, *_scores(history, qid, solution), to_open, title))
    if not rows:
        click.echo(f"No questions found in {root / 'solutions'}.")
        return
    header = ("", "question", "level", "code (last, best)", "interview", "derivation", "start with")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    graded = " (scores: this folder's " + FILENAME + ")" if history.questions else ""
    click.echo(f"{len(rows)} questions{graded}:\n")
    for row in [header] + rows:
        click.echo("  " + "  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip())
        if row is not header:
            click.echo(f"      {row[-1]}")
    fresh = [r[1] for r in rows if not history.best(r[1]) and not (Path.cwd() / notebooks[r[1]].name).exists()]
    if fresh:
        click.echo(f"\nStart one in this folder: `grade start {fresh[0]}`, "
                   f"then grade it: `grade {notebooks[fresh[0]].name}`.")
    page = root / "docs" / "interview.md"  # written by `grade release` (grader/authoring/interview.py)
    if page.is_file():
        click.echo(f"Before an interview, revise every question's spoken answer and follow-ups "
                   f"on one page: {_shown_path(page)}")
    click.echo("Rehearse the spoken answer aloud, the question that is due first: `grade interview`.")


def question_argument(text: str, known: dict) -> str:
    """The question id a learner typed (an id, a number, a notebook's name), or a usage error
    with the closest ids."""
    from backprop_traps.grader.commands.names import resolve_question, unknown_question
    qid = resolve_question(text, known)
    if qid is None:
        raise click.BadParameter(unknown_question(text, known), param_hint="QUESTION")
    return qid


@click.command("start")
@click.argument("question")
@click.argument("folder", required=False, type=click.Path(file_okay=False), default=".")
@click.option("--force", is_flag=True, help="Overwrite the notebook if it is already there (your work is lost).")
@click.option("--solution", is_flag=True,
              help="Once every hidden check passes: copy the reference solution notebook and the "
                   "question's kernels next to your notebook.")
@click.option("--questions-dir", type=click.Path(file_okay=False), default=None,
              help="Folder with your own questions (same layout as this repo).")
def start(question, folder, force, solution, questions_dir):
    """Copy QUESTION's stub notebook into FOLDER (default: here) and say how to grade it.
    QUESTION is an id (batchnorm_backward), its number in `grade list` (15) or both
    (15_batchnorm). With --solution, once you have full marks, the reference solution and
    the kernels too (your notebook is kept)."""
    from backprop_traps.grader.loading.questions import exercise_path, questions_root, solution_notebooks

    root = questions_root(questions_dir)
    known = solution_notebooks(root)
    question = question_argument(question, known)
    if solution:
        from backprop_traps.grader.learner.history import History
        from backprop_traps.grader.learner.mock_clock import refusal as mock_refusal
        refusal = mock_refusal(History.load(), "copying the solution") or _not_yet(question)
        if refusal:  # the solution gives the answer away: nothing is copied before full marks, nor in a mock
            click.echo(refusal, err=True)
            sys.exit(1)
    stub = exercise_path(question, root)
    if not stub.is_file():
        click.echo(f"The stub {stub} is missing; regenerate the stubs with `grade release`.", err=True)
        sys.exit(1)
    target = Path(folder) / stub.name
    shown = shlex.quote(_shown_path(target.resolve()))
    if target.exists() and not force:
        if solution:  # the learner's own notebook stays as it is
            _copy_solution(question, root, Path(folder))
            return
        click.echo(f"{shown} already exists; your work there is kept. Grade it with `grade {shown}`, "
                   "or add --force to start over (that overwrites it).", err=True)
        sys.exit(1)
    _copy(stub, target)
    click.echo(f"Copied the {question} stub to {shown}. Open it in Jupyter, derive the backward in its\n"
               "\"Your derivation\" cell, fill in the functions (Run All ends in the grade cell), or\n"
               "grade it from here:\n\n"
               f"    grade {shown}\n\n"
               f"Stuck on the math? `grade reveal {question}` shows the derivation one step at a time.")
    if solution:
        _copy_solution(question, root, Path(folder))


def _not_yet(question: str) -> str | None:
    """Why `start --solution` copies nothing yet (no full marks recorded in this folder), or None."""
    from backprop_traps.grader.learner.next_steps import not_yet
    return not_yet(question)


def _copy(source: Path, target: Path) -> None:
    """Copy to a temporary file beside ``target``, then rename it over: a link or a FIFO with
    the target's name is replaced, never written through."""
    import tempfile
    tmp = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
        shutil.copyfile(source, tmp)
        umask = os.umask(0o022)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as a plain copy would be (mkstemp makes it private)
        os.replace(tmp, target)
        tmp = None
    except OSError as e:
        if tmp:
            Path(tmp).unlink(missing_ok=True)
        click.echo(f"Could not write {shlex.quote(_shown_path(target.resolve()))}: {e.strerror or e}", err=True)
        sys.exit(1)


def _copy_solution(question: str, root: Path, folder: Path) -> None:
    """`start --solution`: the reference solution notebook and the kernels, beside the stub."""
    from backprop_traps.grader.learner.next_steps import copy_solution
    try:
        said = copy_solution(question, root, folder)
    except OSError as e:
        click.echo(f"Could not copy the reference solution into {shlex.quote(_shown_path(folder.resolve()))}: "
                   f"{e.strerror or e}", err=True)
        sys.exit(1)
    click.echo("\n".join(said))
