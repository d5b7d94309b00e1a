"""A file graded against one question that answers another: say which, instead of a row of
"not defined" failures and a recorded 0 (issue 24: `grade nb.ipynb -q layernorm_backward` on a
softmax notebook).

Each question's functions are the ones its stub defines (the learner fills in exactly those).
A submission that defines none of the asked question's functions and most of another's looks
like an answer to that other question. Only ``def`` lines are read, never run: the learner's
with a regular expression (parsing learner code in the grader would let a parse bomb take
the grader's memory: issue 23), the stubs, which are the kit's own, with ``ast``.
"""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from backprop_traps.grader.loading.notebook import graded_cells, parse_notebook


_DEF = re.compile(r"^(?:async[ \t]+def|def|class)[ \t]+([A-Za-z_]\w*)", re.M)


def declared_names(sources) -> set[str]:
    """Names of the top-level ``def``, ``async def`` and ``class`` lines in untrusted sources:
    one linear scan, no parser."""
    return {name for source in sources for name in _DEF.findall(source)}


def defined_functions(sources) -> set[str]:
    """Top-level function and class names in the sources (texts that do not parse are skipped
    one by one, so one broken cell hides nothing else)."""
    names: set[str] = set()
    for source in sources:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        names |= {node.name for node in tree.body
                  if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    return names


@functools.lru_cache(maxsize=64)
def question_functions(stub: str) -> frozenset[str]:
    """The functions a question's stub (path) asks for: its graded cells' top-level defs."""
    try:
        nb = parse_notebook(Path(stub).read_text(encoding="utf-8"))
    except Exception:  # noqa: BLE001 (an unreadable stub: nothing to compare with)
        return frozenset()
    return frozenset(defined_functions(fallback for _, _, fallback in graded_cells(nb)))


def looks_like(sub, question: str, root: Path) -> str | None:
    """The id of the other question ``sub`` answers, when it defines none of ``question``'s
    functions and at least half of that one's; None otherwise."""
    from backprop_traps.grader.loading.questions import exercise_path, solution_notebooks
    sources = [fallback for _, _, fallback in sub.cells] if sub.cells else [sub.source]
    have = declared_names(sources)
    wanted = question_functions(str(exercise_path(question, root)))
    if not wanted or have & wanted:
        return None
    best, share = None, 0.5
    for other in solution_notebooks(root):
        if other == question:
            continue
        theirs = question_functions(str(exercise_path(other, root)))
        if theirs and len(have & theirs) / len(theirs) >= share:
            best, share = other, len(have & theirs) / len(theirs)
    return best


def sentence(sub_path: str, question: str, other: str, root: Path) -> str:
    from backprop_traps.grader.loading.questions import exercise_path
    wanted = sorted(question_functions(str(exercise_path(question, root))))
    return (f"{Path(sub_path).name} looks like an answer to '{other}', not '{question}': it defines "
            f"none of {question}'s functions ({', '.join(wanted)}) and most of {other}'s. Grade it "
            f"with --question {other}, or open the right file")
