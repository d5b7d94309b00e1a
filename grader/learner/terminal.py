"""The terminal choke point (issue 43, class 2): every command that prints learner or history
text (`grade next`, `grade progress`, `grade show`, `grade mock`, `grade interview`) prints it
through ``say``, which makes the whole text inert (sandbox/inert.py: ESC, BEL, every other C0
and C1 control, bidi marks and overrides, zero-width and tag characters shown escaped; line
breaks kept). The history is a file in the learner's folder that anything may have written, so
its text is treated as the learner's. These commands add no colour of their own, so nothing the
grader means as a control sequence passes here. JSON keeps its syntax: ``inert_json`` writes
such characters as JSON's own ``\\uXXXX`` escapes, so the document means the same.
"""
from __future__ import annotations

import click

from backprop_traps.grader.sandbox.inert import inert, shown_as_is


def shown(text) -> str:
    """``text`` as a terminal may show it: inert, line breaks kept."""
    return inert(text, keep_newlines=True)


def say(text="", err: bool = False, nl: bool = True) -> None:
    """``click.echo`` of ``text`` made inert: the one way these commands print."""
    click.echo(shown(text), err=err, nl=nl)


def _json_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # a UTF-16 surrogate pair, as JSON writes a character beyond the BMP
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def inert_json(text: str) -> str:
    """A JSON document (``json.dumps(..., ensure_ascii=False)``) with every character inert text
    would escape written as a JSON escape: such characters occur only inside strings, where
    ``\\uXXXX`` means the same character, so the document's meaning is unchanged."""
    return "".join(c if c == "\n" or shown_as_is(c) else _json_escape(c) for c in text)
