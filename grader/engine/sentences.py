"""Where a sentence of feedback ends: a trap's symptom is its explanation's first sentence, and
its rule the sentences after. A module of its own, so that ``question`` (a trap's symptom) and
``trap_feedback`` (the report and the hints) both read it without importing each other."""
from __future__ import annotations

import re

SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(])")


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (up to a full stop followed by a capital letter)."""
    return SENTENCE_END.split(text.strip(), maxsplit=1)[0]


def rest_after_first(text: str) -> str:
    parts = SENTENCE_END.split(text.strip(), maxsplit=1)
    return parts[1] if len(parts) > 1 else ""
