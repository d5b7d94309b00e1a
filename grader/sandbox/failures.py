"""What the learner reads when a call into their code fails: the child's failure reply,
made inert (every text in it is the child's choice), turned into one sentence that says
what raised, where in their code (cell and line), and why when the grader can tell
(a cell that stopped loading, a global left by an earlier call)."""
from __future__ import annotations

from backprop_traps.grader.sandbox.inert import inert


def inert_failure(reply: dict) -> dict:
    """A failure reply with every text the child chose made inert (it reaches reports)."""
    err = reply.get("error")
    clean = {"kind": inert(reply.get("kind", "exception"), 40),
             "message": inert(reply.get("message", ""), 400)}
    if isinstance(err, dict):
        line = err.get("line")
        clean["error"] = {"type": inert(err.get("type", "an exception"), 80),
                          "message": inert(err.get("message", ""), 400),
                          "line": line if isinstance(line, int) and not isinstance(line, bool) else None}
        # which cell (``<cell 7>``) and the stale globals read (describe_exception): names only
        if isinstance(err.get("cell"), str):
            clean["error"]["cell"] = inert(err["cell"], 40)
        if isinstance(err.get("stale"), list):
            clean["error"]["stale"] = [inert(s, 80) for s in err["stale"][:5] if isinstance(s, str)]
        # what tells the sandbox's refusals from the learner's errors (refusals.py)
        code = err.get("errno")
        clean["error"]["errno"] = code if isinstance(code, int) and not isinstance(code, bool) else None
        clean["error"]["filename"] = inert(err["filename"], 300) if isinstance(err.get("filename"), str) else None
        clean["error"]["library"] = err.get("library") is True
    return {**reply, **clean}


RESOURCE_ERRORS = ("MemoryError", "RecursionError")
"""Exceptions that say the call ran out of something, whatever globals it read on the way."""


def describe_failure(reply: dict, what: str, source: str, cells, warnings) -> str:
    """One sentence for the learner from a failure ``reply`` of the child (already inert)."""
    kind = reply.get("kind")
    if kind == "missing":
        text = f"{what.rstrip('()')} is not defined in your code"
        if warnings:
            text += " (did an error stop the cell that defines it? See the warnings above the checks)"
        return text
    if kind == "bad_return":
        return f"{what} returned a value the grader cannot use: {reply.get('message', '')}"
    err = reply.get("error") or {}
    if not isinstance(err, dict):
        err = {}
    loading = what[len("loading "):] if what.startswith("loading ") else None
    if loading is not None and isinstance(err.get("cell"), str):  # a cell of the learner's
        where = locate(err.get("line"), err.get("cell"), source, cells, bare=True)
        message = f": {err.get('message')}" if err.get("message") else ""
        if err.get("type") in ("SyntaxError", "IndentationError", "TabError"):
            return f"{loading} is not valid Python, so none of it ran: {err.get('type')}{message}{where}"
        rest = "the lines after it in this cell" if loading.startswith("cell ") else "the lines after it"
        return f"{loading} raised {err.get('type', 'an exception')}{message}{where}; {rest} did not run"
    if kind == "not_implemented":
        return f"{what} is not implemented yet (it raises NotImplementedError)"
    where = locate(err.get("line"), err.get("cell"), source, cells)
    message = f": {err.get('message')}" if err.get("message") else ""
    text = f"{what} raised {err.get('type', 'an exception')}{message}{where}"
    stale = [s for s in (err.get("stale") or []) if isinstance(s, str)][:3]
    if stale and err.get("type") not in RESOURCE_ERRORS:  # running out says nothing about globals
        names = ", ".join(f"`{s}`" for s in stale)
        text += (f". It reads {names}, which your functions changed when the grader called them: "
                 "the grader calls each function on inputs of its own, so what an earlier call left "
                 "in a global (say the forward's input, kept for the backward) belongs to other "
                 "inputs. Use only the arguments, and what the forward returned as its cache")
    return text

def locate(line, cell, source: str, cells, bare: bool = False) -> str:
    """' (cell 4, line 2: `code`)' for a line of the learner's code: ``cell`` is the name
    the code was compiled under (``<cell 4>``; else the whole ``source``). ``bare``
    leaves the cell out (the sentence already names it)."""
    if not isinstance(line, int):
        return ""
    label = cell[1:-1] if isinstance(cell, str) and cell.startswith("<cell ") else None
    sources = {c[0]: c[1] for c in (cells or []) if isinstance(c[1], str)}
    if label is not None and label in sources:
        lines = sources[label].splitlines()
        if not 1 <= line <= len(lines):
            return ""
        code = lines[line - 1].strip()
        return f" ({'' if bare else label + ', '}line {line}: `{code[:80]}`)"
    lines = source.splitlines() if isinstance(source, str) else []
    if not 1 <= line <= len(lines):
        return ""
    marked, offset = None, line
    for i in range(line - 1, -1, -1):
        if lines[i].startswith("# --- cell ") and lines[i].endswith(" ---"):
            marked, offset = lines[i][len("# --- cell "):-4], line - i - 1
            break
    code = lines[line - 1].strip()
    place = f"cell {marked}, line {offset}" if marked is not None and not bare else f"line {line}"
    return f" ({place}: `{code[:80]}`)"
