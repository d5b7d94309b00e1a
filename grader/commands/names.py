"""What a learner may type for a question, a subcommand or a notebook, and "did you mean".

`grade list` numbers the questions, so `grade start 15`, `grade start 15_batchnorm` and
`grade start 15_batchnorm_backward.ipynb` all mean `batchnorm_backward`; a typo gets the
closest names (difflib), never a bare refusal. Only the standard library: this runs on the
learner's path, before anything heavy is imported.
"""
from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

_NUMBERED = re.compile(r"^(\d{1,3})(?:[_\-\s](.*))?$")


def resolve_question(text: str, known: dict) -> str | None:
    """The question id ``text`` means, or None. ``known`` maps each id to its solution notebook
    (``NN_<id>.ipynb``). Accepted: the id; the notebook's name with or without ``.ipynb``; its
    number (``15``, ``015``); the number and the start of the id (``15_batchnorm``)."""
    text = text.strip()
    if text in known:
        return text
    stem = text[:-len(".ipynb")] if text.endswith(".ipynb") else text
    stem = Path(stem).name
    for qid, notebook in known.items():
        if stem == Path(notebook).stem:
            return qid
    match = _NUMBERED.match(stem)
    if not match:
        return None
    number, rest = int(match.group(1)), (match.group(2) or "").strip().lower()
    for qid, notebook in known.items():
        prefix = Path(notebook).name.split("_", 1)[0]
        if prefix.isdigit() and int(prefix) == number:
            return qid if not rest or qid.startswith(rest.replace("-", "_")) else None
    return None


def close_matches(text: str, names, n: int = 3) -> list[str]:
    """The names closest to ``text`` (difflib's ratio, 0.6 and up), best first."""
    return difflib.get_close_matches(text, list(names), n=n, cutoff=0.6)


def did_you_mean(text: str, names, how=lambda name: f"`{name}`") -> str:
    """" Did you mean `start`?" (with a leading space), or "" when nothing is close."""
    found = close_matches(text, names)
    if not found:
        return ""
    return " Did you mean " + " or ".join(how(name) for name in found) + "?"


def unknown_question(text: str, known: dict) -> str:
    """The sentence for an id that names no question: the closest ids, and how to list them."""
    ids = list(known)
    guess = close_matches(text.lower(), ids) or close_matches(text.lower(), [Path(n).stem for n in known.values()])
    hint = f" Did you mean {' or '.join(guess)}?" if guess else ""
    numbers = [Path(n).name.split("_", 1)[0] for n in known.values()]
    span = f" (or its number, {numbers[0]} to {numbers[-1]})" if numbers and all(x.isdigit() for x in numbers) else ""
    return (f"unknown question {text!r}.{hint} `grade list` lists the {len(ids)} questions: give an "
            f"id such as {ids[0] if ids else 'routing_trap'}{span}.")


def find_submission(path: str) -> str | None:
    """An existing file ``path`` means: itself, or with ``.ipynb`` or ``.py`` added (a notebook
    named without its extension). None when none exists."""
    if os.path.isfile(path):
        return path
    for ext in (".ipynb", ".py"):
        if not path.endswith(ext) and os.path.isfile(path + ext):
            return path + ext
    return None


def nearby_files(path: str) -> list[str]:
    """The notebooks and .py files beside ``path`` whose names are closest to its name."""
    folder = os.path.dirname(path) or "."
    try:
        names = [n for n in os.listdir(folder) if n.endswith((".ipynb", ".py"))]
    except OSError:
        return []
    base = os.path.basename(path)
    found = close_matches(base, names) or [n for n in names if n.startswith(base)][:3]
    return [os.path.join(os.path.dirname(path), n) for n in found]
