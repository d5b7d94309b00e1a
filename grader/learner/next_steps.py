"""What a learner reads after full marks: where the solution, the kernels and the interview are.

Practice first, then the reference: the report points to these only once every hidden check
passes, and `grade start ID --solution` copies the solution notebook and the kernels next to
the learner's stub (from a wheel too: both are package data).
"""
from __future__ import annotations

import os
from pathlib import Path


def _shown(path: Path) -> str:
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else str(path)


def copy_names(question: str, root: Path | None = None) -> tuple[str, str]:
    """The file names `grade start --solution` gives the solution and the kernels copies."""
    from backprop_traps.grader.loading.questions import solution_path
    return f"{solution_path(question, root).stem}_solution.ipynb", f"{question}_kernels.py"


def full_marks_text(question: str, root: Path | None = None) -> str:
    """The lines shown at full marks (empty for an unknown question)."""
    # the page's name from loading/, not authoring/interview.py: full marks need not load the
    # answer matcher (keypoints and its word lists) to print one line
    from backprop_traps.grader.loading.questions import INTERVIEW_PAGE as PAGE
    from backprop_traps.grader.loading.questions import kernel_path, questions_root, solution_notebooks
    root = questions_root(root)
    solution = solution_notebooks(root).get(question)
    if solution is None:
        return ""
    lines = [f"Full marks on {question}. Now compare with the reference:",
             f"  the solution notebook: {_shown(solution)}",
             f"    (`grade start {question} --solution` copies it and the kernels next to your notebook)"]
    kernels = kernel_path(question, root)
    lines.append(f"  its Numba CUDA kernels: {_shown(kernels)}" if kernels else
                 "  its kernels: none for this question (its solution notebook says why)")
    page = root / PAGE
    interview = f"`grade interview {question}`"
    lines.append(f"  the interview: {interview}" + (f", then every answer on one page: {_shown(page)}"
                                                      if page.is_file() else ""))
    return "\n".join(lines)


def not_yet(question: str, folder: Path | None = None) -> str | None:
    """Why the reference solution is not copied yet (no full marks recorded in ``folder``'s
    history, default here), or None once it may be."""
    from backprop_traps.grader.learner.history import History
    best = History.load(folder).best(question) if folder is not None else History.load().best(question)
    if best and best[0] >= best[1]:
        return None
    where = (f"your best here is {best[0]:g} / {best[1]:g} points" if best else
             "no grading of it is recorded in this folder")
    return (f"Not yet: the reference solution of {question} is copied only once every hidden check "
            f"passes, and {where}. Keep going (a hint comes on request); `grade reveal {question}` "
            "shows the derivation one step at a time.")


def copy_solution(question: str, root: Path | None, folder: Path) -> list[str]:
    """Copy the reference solution notebook and the kernels into ``folder``; the sentences that
    say what was copied where (relative to ``folder``). Raises OSError when a copy fails."""
    import shutil
    from backprop_traps.grader.loading.questions import kernel_path, solution_path
    solution_name, kernels_name = copy_names(question, root)
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(solution_path(question, root), folder / solution_name)
    said = [f"Copied the reference solution of {question} to {_in(folder, solution_name)} "
            "(your own notebook is unchanged)."]
    kernels = kernel_path(question, root)
    if kernels is None:
        return said + [f"{question} has no kernels: its solution notebook says why."]
    shutil.copyfile(kernels, folder / kernels_name)
    return said + [f"Copied its Numba CUDA kernels to {_in(folder, kernels_name)}."]


def _in(folder: Path, name: str) -> str:
    import shlex
    return shlex.quote(_shown(folder.resolve() / name))
