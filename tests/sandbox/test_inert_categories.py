"""Issue 35, item 4: inert text by Unicode category (grader/sandbox/inert.py).

Every code point of categories Cc, Cf, Zl, Zp, Cn (unassigned), Co (private use) and Cs (lone
surrogates) comes out escaped, and every other one comes out as it went in: judged over all
1,114,112 code points with ``unicodedata`` itself, not with the filter's own predicate. The
surfaces that show learner text (the report, `grade show`, summaries, exports, nbgrader
feedback) are attacked in tests/redteam/test_redteam_inert.py.
"""
import sys
import unicodedata

import pytest

from backprop_traps.grader.sandbox.inert import ESCAPED_CATEGORIES, inert

ESCAPED = frozenset({"Cc", "Cf", "Zl", "Zp", "Cn", "Co", "Cs"})
NAMED = ["\u061c", "\ufeff", "\u2060", "\u2061", "\u2062", "\u2063", "\u2064", "\u202a", "\u202b",
         "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f",
         "\u2028", "\u2029", "\x1b", "\x9b", "\r", "\ue000", "\U000f0000", "\u0378", "\udc80",
         *map(chr, range(0xE0020, 0xE0080)), "\U000e0001"]
"""The issue's characters (U+061C, the tags U+E0020-E007F, U+FEFF, U+2060-U+2064), the bidi
overrides and isolates, and one of each other kind."""


def code_points(escaped: bool) -> str:
    return "".join(chr(cp) for cp in range(sys.maxunicode + 1)
                   if (unicodedata.category(chr(cp)) in ESCAPED) == escaped)


def test_the_categories_are_the_issues():
    assert ESCAPED_CATEGORIES == ESCAPED


@pytest.mark.parametrize("char", NAMED, ids=lambda c: f"U+{ord(c):04X}")
def test_each_named_character_is_escaped(char):
    shown = inert(f"a{char}b")
    assert shown.isascii() and shown.isprintable() and shown.startswith("a\\") and shown.endswith("b")


def test_every_code_point_of_those_categories_is_escaped():
    hidden = code_points(escaped=True)
    assert len(hidden) > 900_000  # unassigned code points are most of the code space
    shown = inert(hidden)
    assert shown.isascii() and shown.isprintable()
    kept = inert(hidden.replace("\n", ""), keep_newlines=True)  # "\n" alone is kept as a line break
    assert kept.isascii() and kept.isprintable()


def test_every_other_code_point_is_shown_as_it_is():
    visible = code_points(escaped=False)
    assert inert(visible) == visible and inert(visible, keep_newlines=True) == visible


def test_layout_characters_keep_their_meaning():
    assert inert("a\r\nb\tc") == "a\\nb c"
    assert inert("a\r\nb\tc\rd", keep_newlines=True) == "a\nb    c\\rd"
    assert inert("x" * 10 + "\u202e", limit=8) == "xxxxx..."
