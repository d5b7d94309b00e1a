"""Learner text made inert before anything shows it: no control or formatting character, no
escape sequence, no line break that could forge a report line ("PASS 2/2 ...") on a terminal.

Which characters, by Unicode category rather than by a list (a list missed U+061C, the tag
characters U+E0020-E007F, U+FEFF and U+2060-U+2064): every character of

- ``Cc`` control (C0, DEL, C1: escape sequences, ``\\r``, ...),
- ``Cf`` format (bidi marks and overrides, zero-width characters, tags, the BOM, ...),
- ``Zl`` line separator and ``Zp`` paragraph separator (terminals may break lines on them),
- ``Cn`` unassigned (in this Python's Unicode database: a later version may make one a
  format character), ``Co`` private use (a font can draw anything there) and ``Cs`` lone
  surrogates (a file name that is not UTF-8),

is shown escaped (``\\x1b``, ``\\u202e``, ``\\U000e0041``). Everything else, spaces of
category ``Zs`` included, is shown as it is. The grader's own colours are added after this,
by the report, and never pass through here.
"""
from __future__ import annotations

import unicodedata

ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cn", "Co", "Cs"})


def shown_as_is(char: str) -> bool:
    """Whether one character may reach a reader unescaped. ``str.isprintable`` is False for
    exactly the categories ``C*`` and ``Z*`` (but the ASCII space): the C-speed first test."""
    return char.isprintable() or unicodedata.category(char) not in ESCAPED_CATEGORIES


def escaped(char: str) -> str:
    return char.encode("unicode_escape").decode("ascii")


def inert(text, limit: int | None = None, keep_newlines: bool = False) -> str:
    """``text`` with every character of ``ESCAPED_CATEGORIES`` shown escaped, cut to ``limit``
    characters. ``keep_newlines`` keeps ``\\n`` (printed output shown as a block); without
    it a line break is ``\\n``. A tab is spaces."""
    text = str(text)
    if not keep_newlines:
        text = text.replace("\r\n", "\n").replace("\n", "\\n").replace("\t", " ")
        clean = text.isprintable()
    else:
        text = text.replace("\r\n", "\n").replace("\t", "    ")
        clean = text.replace("\n", "").isprintable()
    if not clean:
        text = "".join(c if c == "\n" or shown_as_is(c) else escaped(c) for c in text)
    if limit is not None and len(text) > limit:
        text = text[:limit - 3] + "..."
    return text
