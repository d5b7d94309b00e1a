"""Learner text made inert before a report shows it: no control characters, no escape
sequences, no line breaks that could forge a report line ("PASS 2/2 ...") on a terminal."""
from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069]")


def inert(text, limit: int | None = None, keep_newlines: bool = False) -> str:
    """``text`` with every control character shown escaped (``\\x1b``, ``\\n``), cut to
    ``limit`` characters. ``keep_newlines`` keeps ``\\n`` (printed output shown as a block)."""
    text = str(text)
    if not keep_newlines:
        text = text.replace("\r\n", "\n").replace("\n", "\\n").replace("\t", " ")
    else:
        text = text.replace("\r\n", "\n").replace("\t", "    ")
    text = _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
    if limit is not None and len(text) > limit:
        text = text[:limit - 3] + "..."
    return text
