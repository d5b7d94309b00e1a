"""A way of saying something, as a sequence of elements, and where an answer says it.

A pattern is written like the text it looks for, spelled by the same rules as the answer
(grader/learner/said.py), with four additions:

- a word matches the same word in any inflection (``keep`` finds "kept", "keeps", "keeping");
  a stem that is not an English word finds the words it starts (``accumulat``: "accumulates",
  "accumulation");
- ``a|b c`` (in a key point's part) matches either ``a`` or ``b c``;
- ``{name}`` matches any way the glossary (grader/learner/glossary.py) has of saying ``name``,
  and a run of words that is itself one of the glossary's phrases stands for its concept
  (``square root`` finds "sqrt" and "√");
- ``_`` matches one term of a formula: a name, a number, or a bracketed group, so
  ``sqrt(_) + eps`` finds ``sqrt(v_hat) + eps`` and ``√v̂ + ε`` but not ``sqrt(v_hat + eps)``.

Articles in the answer (``the``, ``a``, ``an``) may stand between two words of a pattern.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from backprop_traps.grader.learner import lexicon
from backprop_traps.grader.learner.said import tokens

_ARTICLES = frozenset({"the", "a", "an"})
_PLACEHOLDER = re.compile(r"\{([a-z_0-9]+)\}")


@dataclass(frozen=True)
class Element:
    """One step of a pattern."""
    kind: str
    """``word`` (any of ``values``, by lemma or stem), ``sym`` (exactly ``values``' one text),
    ``concept`` (the glossary concept named ``values``' one name) or ``term`` (``_``)."""
    values: frozenset = frozenset()

    def __str__(self) -> str:
        if self.kind == "concept":
            return "{" + next(iter(self.values)) + "}"
        return "_" if self.kind == "term" else "|".join(sorted(self.values))


@lru_cache(maxsize=None)
def _stem_only(word: str) -> bool:
    """A word the lexicon does not know (``accumulat``) finds the longer words it starts."""
    return len(word) >= 4 and word.isalpha() and lexicon.lemmas(word) == frozenset({word}) \
        and not lexicon.can_be_verb(word) and not lexicon._forms(word)


def compile_pattern(text: str, concepts: dict | None = None) -> tuple[Element, ...]:
    """The elements of one pattern (one part of an alternative, or a glossary phrase).
    ``concepts`` maps a glossary phrase (its words joined by spaces) to its concept's name."""
    held: dict[str, Element] = {}

    def hold(m: re.Match) -> str:
        key = f"zzheld{len(held)}zz"
        held[key] = Element("concept", frozenset({m.group(1)}))
        return f" {key} "

    raw = _PLACEHOLDER.sub(hold, text.lower())
    elements: list[Element] = []
    for t in tokens(raw):
        if t.text in held:
            elements.append(held[t.text])
        elif t.kind == "word" and t.text in _ARTICLES:
            continue  # the answer's articles are skipped wherever they stand
        elif t.kind == "word" and t.text == "_":
            elements.append(Element("term"))
        elif t.kind == "word":
            elements.append(Element("word", frozenset({t.text}) | (
                frozenset() if _stem_only(t.text) else lexicon.lemmas(t.text))))
        elif t.kind != "stop" or t.text in ",:":
            elements.append(Element("sym", frozenset({t.text})))
    return tuple(_with_concepts(elements, concepts or {}))


def compile_part(text: str, concepts: dict | None = None) -> tuple[tuple[Element, ...], ...]:
    """A key point's part: its ``|``-separated choices, each a pattern."""
    return tuple(p for p in (compile_pattern(choice, concepts) for choice in text.split("|")) if p)


def _with_concepts(elements: list[Element], concepts: dict) -> list[Element]:
    """Runs of plain words that are a glossary phrase become that phrase's concept."""
    out, i = [], 0
    longest = max((len(k.split()) for k in concepts), default=0)
    while i < len(elements):
        for size in range(min(longest, len(elements) - i), 0, -1):
            run = elements[i:i + size]
            if all(e.kind in ("word", "sym") for e in run):
                key = " ".join(_written(e) for e in run)
                if key in concepts:
                    out.append(Element("concept", frozenset({concepts[key]})))
                    i += size
                    break
        else:
            out.append(elements[i])
            i += 1
    return out


def _written(element: Element) -> str:
    """The word a pattern's author wrote for a word element (its shortest spelling)."""
    return min(element.values, key=lambda v: (len(v), v)) if element.kind == "word" else next(iter(element.values))


_MATH_NAMES = frozenset({"exp", "log", "sqrt", "var", "mean", "sum", "max", "min", "abs", "norm", "softmax",
                         "sigma", "mu", "eps", "beta", "gamma", "lambda", "theta", "alpha", "delta", "tau"})


@lru_cache(maxsize=None)
def _formula_name(word: str) -> bool:
    """Whether ``word`` can be a term of a formula: a name (``v_hat``, ``x``, ``w2``), not an
    English word ("sqrt(_) + eps" must not find "root rather than eps")."""
    if word in _MATH_NAMES or len(word) <= 2 or "_" in word or any(c.isdigit() for c in word):
        return word not in lexicon.FUNCTION_WORDS or len(word) == 1
    return not lexicon._forms(word)


class Index:
    """Where each word of a reading is, for finding a pattern's first element quickly, and the
    glossary concepts found in it (computed on demand)."""

    def __init__(self, reading, glossary):
        self.reading = reading
        self.glossary = glossary
        self.at: dict[str, list[int]] = {}
        for i, (t, lemmas) in enumerate(zip(reading.tokens, reading.lemmas)):
            for key in lemmas | {t.text}:
                self.at.setdefault(key, []).append(i)
        self.vocabulary = sorted(self.at)
        self._concepts: dict[str, dict[int, list[int]]] = {}

    def word_at(self, element: Element, i: int) -> bool:
        t = self.reading.tokens[i]
        if t.kind not in ("word", "num"):
            return False
        lemmas = self.reading.lemmas[i]
        for w in element.values:
            if w == t.text or w in lemmas or (_stem_only(w) and any(x.startswith(w) for x in lemmas)):
                return True
        return False

    def starts(self, element: Element) -> list[int]:
        """Token indices where ``element`` may begin."""
        if element.kind == "concept":
            return sorted(self.concept(next(iter(element.values))))
        if element.kind == "term":
            return list(range(len(self.reading.tokens)))
        found = set()
        for w in element.values:
            found.update(self.at.get(w, ()))
            if element.kind == "word" and _stem_only(w):
                for key in self.vocabulary:
                    if key.startswith(w):
                        found.update(self.at[key])
        return sorted(found)

    def concept(self, name: str) -> dict[int, list[int]]:
        """For the concept ``name``: start index -> the end indices (exclusive) of its phrases."""
        if name not in self._concepts:
            self._concepts[name] = {}  # a phrase that names its own concept finds nothing more
            found: dict[int, list[int]] = {}
            for phrase in self.glossary.phrases(name):
                for start, end in self.find(phrase):
                    found.setdefault(start, []).append(end)
            self._concepts[name] = found
        return self._concepts[name]

    def find_part(self, choices) -> list[tuple[int, int]]:
        """Every ``(start, end)`` where the answer says one of a part's choices."""
        return sorted({span for pattern in choices for span in self.find(pattern)})

    def find(self, pattern: tuple[Element, ...]) -> list[tuple[int, int]]:
        """Every ``(start, end)`` (end exclusive) where the answer says ``pattern``."""
        if not pattern:
            return []
        found = []
        for start in self.starts(pattern[0]):
            for end in self._match(pattern, 0, start):
                found.append((start, end))
        return found

    def _match(self, pattern, k: int, i: int):
        """The ends of the matches of ``pattern[k:]`` starting at token ``i``."""
        toks = self.reading.tokens
        if k == len(pattern):
            yield i
            return
        if k > 0:
            while i < len(toks) and toks[i].text in _ARTICLES:
                i += 1
        if i >= len(toks) or toks[i].kind == "stop" and pattern[k].kind != "sym":
            return
        element = pattern[k]
        if element.kind == "word":
            if self.word_at(element, i):
                yield from self._match(pattern, k + 1, i + 1)
        elif element.kind == "sym":
            if toks[i].text in element.values:
                yield from self._match(pattern, k + 1, i + 1)
        elif element.kind == "concept":
            for end in self.concept(next(iter(element.values))).get(i, ()):
                yield from self._match(pattern, k + 1, end)
        else:
            end = self._term(i)
            if end is not None:
                yield from self._match(pattern, k + 1, end)

    def _term(self, i: int) -> int | None:
        """The end of the formula term starting at ``i``: a name or number (with a power or a
        call's brackets), or a bracketed group."""
        toks = self.reading.tokens
        if toks[i].kind == "word" and not _formula_name(toks[i].text):
            return None
        if toks[i].kind in ("word", "num"):
            end = i + 1
            if end < len(toks) and toks[end].kind == "open" and toks[i].kind == "word":
                end = self._closing(end)
            if end is not None and end + 1 < len(toks) and toks[end].text == "^":
                end = self._term(end + 1)
            return end
        if toks[i].kind == "open":
            return self._closing(i)
        return None

    def _closing(self, i: int) -> int | None:
        depth = 0
        for j in range(i, len(self.reading.tokens)):
            kind = self.reading.tokens[j].kind
            depth += kind == "open"
            depth -= kind == "close"
            if depth == 0:
                return j + 1
        return None
