"""``grade new <id>``: write a new question's files, found by the grader with no list to edit.

Questions are discovered from ``solutions/NN_<id>.ipynb`` and their checks by module name,
so writing the files is all it takes. In this kit the checks go to ``grader/checks/<id>.py``;
in an instructor's own questions folder, to ``<folder>/checks/<id>.py``. Checks that outgrow one
file become the package ``checks/<id>/`` (``__init__.py``, ``probes.py``, ``traps.py``).
"""
from __future__ import annotations

import re
from pathlib import Path

from backprop_traps.grader.authoring import templates
from backprop_traps.grader.authoring.artifacts import question_test_path
from backprop_traps.grader.authoring.nbgrader_cell import make_cell
from backprop_traps.grader.authoring.stub_layout import (DERIVATION, RUN_ALL_GOES_ON, SOLUTION_ONLY, answer_cell,
                                          goes_on_in_run_all)
from backprop_traps.grader.notebook_grade import self_grade_cells
from backprop_traps.grader.loading.questions import REPO_ROOT, questions_root, solution_notebooks

ID = re.compile(r"^[a-z][a-z0-9_]*$")


class ScaffoldError(ValueError):
    """Why a question cannot be scaffolded; the message is a sentence for the author."""


def planned_files(question: str, root: Path, number: int) -> dict[str, Path]:
    checks = (REPO_ROOT / "grader" / "checks" if root == REPO_ROOT else root / "checks") / f"{question}.py"
    return {"solution": root / "solutions" / f"{number:02d}_{question}.ipynb",
            "checks": checks,
            "kernels": root / "kernels" / f"{question}.py",
            "kernel test": root / "tests" / "kernels" / f"test_{question}_kernels.py",
            "test": question_test_path(question, root),
            "trap answer": root / "tests" / "answers" / question / "sign_flipped.py",
            "corpus": root / "docs" / "interview_corpus" / f"{question}.md"}


def solution_notebook(question: str, title: str):
    """The solution notebook template: nbgrader metadata on every cell, the question id in
    the notebook's metadata, the stub layout's cells (the "Your derivation" answer cell, a
    derivation step, the solution-only mistakes), the autograded hidden-checks cell, then the
    "Grade it" cells."""
    import nbformat
    v4 = nbformat.v4

    def code(source, grade_id, grade=False, solution=False, points=None):
        meta = {"grade": grade, "solution": solution, "locked": not solution,
                "grade_id": grade_id, "schema_version": 3}
        if points is not None:
            meta["points"] = points
        return v4.new_code_cell(source, metadata={"nbgrader": meta})

    values = {"qid": question, "title": title}
    nb = v4.new_notebook(metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
        "backprop_traps": {"question": question}})
    nb.cells = [
        v4.new_markdown_cell(templates.MARKDOWN_INTRO.substitute(values)),
        code(templates.SETUP, "setup"),
        v4.new_markdown_cell(templates.MARKDOWN_TASK),
        v4.new_markdown_cell(templates.MARKDOWN_DERIVATION, metadata={"tags": [DERIVATION]}),
        code(templates.SOLUTION.substitute(values), question, solution=True),
        code(templates.VISIBLE_TEST.substitute(values), f"test_{question}", grade=True, points=1),
        v4.new_markdown_cell(templates.MARKDOWN_TRAPS, metadata={"tags": [SOLUTION_ONLY]}),
        v4.new_markdown_cell(templates.MARKDOWN_INTERVIEW, metadata={"tags": ["interview"]}),
        make_cell(question, 3),  # the template's checks are worth 1 + 2 points
        *self_grade_cells(question),
    ]
    nb.cells.insert(3, nbformat.from_dict(answer_cell(question)))  # before the first derivation step
    for cell in nb.cells:  # Run All goes on past a failing visible test to "Grade it"
        if goes_on_in_run_all(cell):
            cell.metadata["tags"] = [*cell.metadata.get("tags", []), RUN_ALL_GOES_ON]
    for i, cell in enumerate(nb.cells):  # stable ids: the scaffold is reproducible
        cell["id"] = cell.get("id") if cell.get("id") in ("hidden-checks", "derivation-answer") else f"cell-{i}"
    return nb


def new_question(question: str, root: Path | str | None = None, title: str | None = None,
                 number: int | None = None) -> dict[str, Path]:
    """Write the files of ``question``; returns them by role. Never overwrites a file."""
    import nbformat
    root = questions_root(root)
    if not ID.match(question):
        raise ScaffoldError(f"'{question}' is not a usable id: lower-case letters, digits and _, "
                            "starting with a letter (it names files and functions)")
    existing = solution_notebooks(root)
    if question in existing:
        raise ScaffoldError(f"{question} already exists: {existing[question]}")
    used = [int(p.name.split("_", 1)[0]) for p in existing.values()]
    number = number if number is not None else max(used, default=0) + 1
    files = planned_files(question, root, number)
    taken = [str(p) for p in files.values() if p.exists()]
    if taken:
        raise ScaffoldError("these files exist already; move them away first: " + ", ".join(taken))
    title = title or question.replace("_", " ").capitalize()
    values = {"qid": question, "title": title}
    texts = {"checks": templates.CHECKS, "kernels": templates.KERNELS,
             "kernel test": templates.KERNEL_TEST, "test": templates.QUESTION_TEST,
             "trap answer": templates.TRAP_ANSWER, "corpus": templates.INTERVIEW_CORPUS}
    for role, path in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if role == "solution":
            nbformat.write(solution_notebook(question, title), str(path))
        else:
            path.write_text(texts[role].substitute(values), encoding="utf-8")
    from backprop_traps.grader.authoring.release import release
    release(question, root)
    files["stub"] = root / "exercises" / files["solution"].name
    return files
