"""Key points: what a spoken answer must say, and whether a typed answer says it.

A question's interview cell ends in a section of bullets, one per point::

    **Key points.**
    - each row of dx sums to zero: sums to zero; sum to 0; zero-sum; sum(dx) = 0
    - the mean and variance depend on x: mean + depend on x; statistics + not constant

Before the last colon, the phrase a learner recognises; after it, the ways of saying it
that count, separated by ``;``. An alternative matches when every part of it (parts are
separated by `` + ``, a plus with spaces; ``a+b`` stays a literal plus) appears in the text,
word for word, where a word of three letters or more also finds the words it starts
(``depend on x`` finds "depends on x", ``sum`` finds "sums" and "summed" but not "assume");
shorter words, numbers and operators must be equal. A place where a negation comes just
before it (``not``, ``no``, ``never``, ``n't``, within two words) does not count: "does not
depend on x" does not say ``depend on x``, while "if you don't subtract the max" (a condition)
still says ``subtract the max``; a part that is itself negated ("not constant") is looked for
as written. Text and parts are normalised the same way first: lower case, symbols spelled
out (``√`` is sqrt, ``Σ`` is sum, ``ᵀ``, ``.T`` and ``^T`` are transpose, ``·`` and ``×``
are ``*``), punctuation dropped, operators kept as words of their own, and a hyphen between
words read as a space ("zero-sum" is "zero sum", while "p-y" stays "p - y").

The standard library only: ``grade interview`` imports this and nothing heavy.
"""
from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass, field

POINTS = (4, 7)
"""How many key points a question has: at least, at most."""

# Symbols a learner may type or paste, spelled the way the alternatives are written.
_SYMBOLS = {
    "√": " sqrt ", "∑": " sum ", "Σ": " sum ", "∂": " d ", "∇": " grad ", "ε": " eps ",
    "σ": " sigma ", "μ": " mu ", "τ": " tau ", "η": " lr ", "λ": " lambda ", "θ": " theta ",
    "·": " * ", "×": " * ", "⋅": " * ", "∘": " * ", "⊙": " * ", "−": " - ", "–": " - ",
    "—": " ", "≤": " <= ", "≥": " >= ", "≈": " ~ ", "→": " -> ", "²": "^2", "³": "^3",
    "¹": "^1", "⁰": "^0", "½": " 1 / 2 ", "ᵀ": " transpose ", "∞": " inf ", "π": " pi ",
    "≠": " != ",
}
_TRANSPOSE = re.compile(r"(?<=[\w)\]])(?:\.t\b|\^t\b|\^\{t\})")
_WORD_HYPHEN = re.compile(r"(?<=[a-z]{2})-(?=[a-z])|(?<=[a-z])-(?=[a-z]{2})|(?<=\d)-(?=[a-z]{2})")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_TOKEN = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?|[a-z_][a-z0-9_]*|<=|>=|!=|->|[-+*/=<>^~%|]")


def normalise(text: str) -> str:
    """``text`` as a single-spaced string of words, numbers and operators, in lower case."""
    text = unicodedata.normalize("NFKD", "".join(_SYMBOLS.get(ch, ch) for ch in str(text)))
    text = "".join(" hat " if ch == "\u0302" else ch for ch in text if ch == "\u0302" or not unicodedata.combining(ch))
    text = _TRANSPOSE.sub(" transpose ", text.lower())
    text = _THOUSANDS.sub("", _WORD_HYPHEN.sub(" ", text))
    return " ".join(_TOKEN.findall(text))


@dataclass
class KeyPoint:
    """One thing the spoken answer must say."""
    point: str
    """The phrase a learner recognises (shown in the checklist)."""
    alternatives: list[list[str]] = field(default_factory=list)
    """Each way of saying it: its parts, normalised; the phrase itself is the first."""

    def matches(self, text: str) -> bool:
        """Whether ``text`` says this point in one of the ways that count."""
        return self.matches_said(Said(normalise(text).split()))

    def matches_said(self, said: "Said") -> bool:
        """``matches`` for text already normalised and indexed."""
        return any(all(said.has(part.split()) for part in parts) for parts in self.alternatives)


_NEGATIONS = frozenset({"not", "no", "never", "t", "cannot", "nor", "neither"})
"""Words that turn what follows into its opposite ("doesn't" is normalised to "doesn t")."""
_CONDITIONS = frozenset({"if", "unless", "when", "otherwise", "without", "else", "or"})
"""Words that make a negation just after them a condition ("if you don't subtract the max,
exp overflows" still says to subtract the max)."""
_NEGATION_REACH = 2


def _stem(word: str) -> bool:
    """A word of three letters or more also finds the longer words it starts."""
    return len(word) >= 3 and word[0].isalpha()


class Said:
    """A normalised answer's words, indexed so that looking for a part costs about the number
    of places its first word occurs, not the length of the answer."""

    def __init__(self, words: list[str]):
        self.words = words
        self._at: dict[str, list[int]] = {}
        for i, word in enumerate(words):
            self._at.setdefault(word, []).append(i)
        self._vocabulary = sorted(self._at)

    def _starts(self, wanted: str) -> list[int]:
        if not _stem(wanted):
            return self._at.get(wanted, [])
        found, i = [], bisect.bisect_left(self._vocabulary, wanted)
        while i < len(self._vocabulary) and self._vocabulary[i].startswith(wanted):
            found += self._at[self._vocabulary[i]]
            i += 1
        return found

    def has(self, wanted: list[str]) -> bool:
        """Whether the words ``wanted`` appear in a row (each equal, or started by a stem),
        somewhere not negated just before."""
        n = len(wanted)
        negated_part = any(w in _NEGATIONS for w in wanted)
        return any(all(said == want or (_stem(want) and said.startswith(want))
                       for want, said in zip(wanted[1:], self.words[start + 1:start + n]))
                   and (negated_part or not self._negated(start))
                   for start in self._starts(wanted[0]) if start + n <= len(self.words))

    def _negated(self, start: int) -> bool:
        for at in range(max(0, start - _NEGATION_REACH), start):
            if self.words[at] in _NEGATIONS:
                return not any(w in _CONDITIONS for w in self.words[max(0, at - 3):at])
        return False


def _parts(alternative: str) -> list[str]:
    return [p for p in (normalise(part) for part in re.split(r"\s\+\s", f" {alternative} ")) if p]


def parse(section: str) -> tuple[list[KeyPoint], list[str]]:
    """The key points of a section's text (the bullets after **Key points.**), and what is
    malformed in it, one sentence each."""
    points, problems = [], []
    for item in re.split(r"^\s*[-*] ", section, flags=re.M)[1:]:
        item = " ".join(item.split())
        phrase, colon, rest = item.rpartition(": ")  # the phrase may hold a colon; the ways do not
        if not colon or not phrase.strip() or not rest.strip():
            problems.append(f"a key point is not '- phrase: a way of saying it; another': {item[:60]!r}")
            continue
        alternatives = [_parts(phrase)] + [_parts(a) for a in rest.split(";") if a.strip()]
        empty = [a for a in rest.split(";") if a.strip() and not _parts(a)]
        if empty:
            problems.append(f"key point {phrase!r}: {empty[0].strip()!r} has no word or symbol to look for")
        points.append(KeyPoint(phrase.strip(), [a for a in alternatives if a]))
    low, high = POINTS
    if not low <= len(points) <= high:
        problems.append(f"{len(points)} key points; write {low} to {high}")
    return points, problems


def hits(points: list[KeyPoint], text: str) -> list[bool]:
    """For each point, whether ``text`` says it."""
    said = Said(normalise(text).split())
    return [p.matches_said(said) for p in points]
