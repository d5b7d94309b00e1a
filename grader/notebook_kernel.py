"""What this IPython kernel ran *last* for each cell of the saved notebook (issue 51, item 1).

The kernel's history says which texts were ever run, not which one a cell ran last: after a
first Run All of the saved file, an edit run without saving ("make `maxpool2d_backward` the
trap, run that cell") leaves the saved text in the history, and the saved file looked like what
the kernel ran. What decides is the definitions the kernel holds now: IPython compiles every
cell under a name of its own and keeps the cell's text in ``linecache`` under that name
(``CachingCompiler.cache``), so each live function's code says which cell text defined it. A
function, lambda or class that a saved cell defines but that the kernel holds from a text the
saved file does not have is a cell edited and run without saving.
"""
from __future__ import annotations

import ast
import inspect
import linecache
from dataclasses import dataclass


@dataclass
class Edited:
    """A saved cell whose definitions this kernel holds from another text."""
    source: str
    """The cell's text as saved (stripped)."""
    names: list[str]
    """The names the kernel holds from an unsaved text, in the cell's order."""
    run: int | None = None
    """The execution count of that unsaved text's latest run (JupyterLab's ``[n]``), if known."""


def defined_names(source: str) -> list[str]:
    """The names a cell binds at its top level (def, class, assignment, in order); [] when the
    cell is not Python (its text decides then, as before)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [t.id for t in targets if isinstance(t, ast.Name)]
    return list(dict.fromkeys(names))


def _code(obj):
    """The code object behind a live function, lambda, method, decorated or jitted function, or
    a class's first own method; None for anything else. Never raises."""
    try:
        if callable(obj) and not isinstance(obj, type):
            obj = inspect.unwrap(obj)  # functools.wraps
        for candidate in (obj, getattr(obj, "py_func", None), getattr(obj, "__func__", None)):
            code = getattr(candidate, "__code__", None)
            if code is not None and hasattr(code, "co_filename"):
                return code
        if isinstance(obj, type):
            for member in vars(obj).values():
                code = getattr(getattr(member, "__func__", member), "__code__", None)
                if code is not None and hasattr(code, "co_filename"):
                    return code
    except Exception:  # noqa: BLE001 (a learner's object with odd attributes: no verdict)
        return None
    return None


def _normal(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def edited_cells(graded: list[str], saved: list[str], shell) -> list[Edited]:
    """The cells of ``graded`` (saved texts) whose definitions ``shell`` (an IPython shell)
    holds from a text found in no cell of ``saved`` (every saved code cell's text)."""
    namespace = getattr(shell, "user_ns", None) or {}
    numbers = getattr(getattr(shell, "compile", None), "_filename_map", None) or {}
    known = set()
    for text in saved:
        known.add(_normal(text))
        try:
            known.add(_normal(shell.transform_cell(text)))  # the text IPython compiles (magics)
        except Exception:  # noqa: BLE001 (a cell IPython cannot transform: its text alone)
            pass
    edited: list[Edited] = []
    for source in graded:
        found = Edited(source, [])
        for name in defined_names(source):
            code = _code(namespace.get(name))
            if code is None:
                continue
            filename = code.co_filename
            entry = linecache.cache.get(filename)
            if not (filename in numbers or (entry is not None and entry[1] is None)):
                continue  # not from a cell (an import, a library): not this check's business
            text = "".join(linecache.getlines(filename))
            if text and _normal(text) not in known:
                found.names.append(name)
                found.run = numbers.get(filename, found.run)
        if found.names:
            edited.append(found)
    return edited
