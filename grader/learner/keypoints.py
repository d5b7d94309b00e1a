"""Key points: what a spoken answer must say, and whether (and where) a typed answer says it.

A question's interview cell ends in a section of bullets, one per point::

    **Key points.**
    - eps goes outside the square root: eps + outside|after + square root; sqrt(_) + eps
    - bias correction divides by one minus beta to the t: divide + {bias_correction}

Before the last colon, the phrase a learner recognises; after it, the ways of saying it that
count, separated by ``;``. An alternative's parts are separated by `` + `` (a plus with spaces;
``a+b`` stays a literal plus), a part's choices by ``|`` (``outside|after the``), and each
choice is a pattern (grader/learner/patterns.py: words in any inflection, ``{concept}`` from the
kit's glossary, ``_`` for one formula term).

An alternative counts only where the answer *asserts* it (grader/learner/clauses.py):

- every part is said in one sentence, none of them denied (``not``, ``no``, ``never``,
  ``without``, ``instead of``, ``rather than``: "eps inside the root, not outside" does not
  say ``outside``), none of them asked ("why is decay decoupled?"), none in a bare list of
  words ("Decoupled. eps outside."); a part may sit in a condition ("if it overflows, skip the
  step") but one at least must be in the claim itself;
- it says something the question did not: the words it matched are not all the question's
  own (repeating "explode" back to "what if the gradients explode?" earns nothing).

A part that holds a negation itself (``no learning rate``, ``instead of the gradient``) is
looked for as written; a part that is only a negation (``not``, ``instead of``) must deny the
part written after it, and no part before it. For each point ``check`` returns the words of
the answer that hit it, or why nothing did.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from backprop_traps.grader.learner import clauses, lexicon, phrase_states, polarity
from backprop_traps.grader.learner.glossary import glossary
from backprop_traps.grader.learner.patterns import Element, Index, compile_part
from backprop_traps.grader.learner.said import normalise  # noqa: F401  (the spelling rules, re-exported)

POINTS = (4, 7)
"""How many key points a question has: at least, at most."""

_WHY = {clauses.ASKED: "asked, not said", clauses.FRAGMENT: "named, not claimed (no statement)",
        clauses.LISTED: "listed, not claimed", "negated": "denied", clauses.CONDITION: "only in a condition",
        clauses.CONTEXT: "only beside the claim", "question": "only the question's own words",
        "inverted": "says the other way round", "requantified": "says another quantity"}
_OPERATORS = clauses.RELATIONS | frozenset({"+", "-", "*", "/", "^", "@"})
"""Operators that say something of their own: a formula's relation or arithmetic."""
_PURE_NEGATORS = frozenset({"not", "never", "nor", "neither", "without", "cannot", "instead", "rather", "as", "in"})
"""Negators that only deny, never state a fact of their own ("nothing", "no" can: "gets nothing")."""
_RANK = {clauses.CLAIM: 0, clauses.CONDITION: 1, clauses.CONTEXT: 1, clauses.LISTED: 2, clauses.FRAGMENT: 2,
         clauses.ASKED: 3, "negated": 4, "inverted": 4, "requantified": 4}


@dataclass
class KeyPoint:
    """One thing the spoken answer must say."""
    point: str
    """The phrase a learner recognises (shown in the checklist)."""
    alternatives: list[list[str]] = field(default_factory=list)
    """Each way of saying it: its parts, as written; the phrase itself is the first."""

    def __post_init__(self):
        self._compiled = None

    def compiled(self) -> list[list[tuple[tuple[Element, ...], ...]]]:
        """Each alternative: its parts, each part its choices, each choice a pattern."""
        if self._compiled is None:
            concepts = glossary().by_phrase
            self._compiled = [[p for p in (compile_part(part, concepts) for part in parts) if p]
                              for parts in self.alternatives]
            self._compiled = [a for a in self._compiled if a]
        return self._compiled

    def stated(self) -> tuple[frozenset, frozenset]:
        """The directions ("outside", "accumulate") and quantities ("16", "one") the phrase
        states (grader/learner/phrase_states.py)."""
        if getattr(self, "_stated", None) is None:
            self._stated = phrase_states.stated(self.point)
        return self._stated

    def matches(self, text: str, question: str = "") -> bool:
        """Whether ``text`` says this point in one of the ways that count."""
        return check([self], text, question)[0].hit


@dataclass
class Verdict:
    """Whether an answer says one key point, and the evidence."""
    point: str
    hit: bool
    evidence: str | None = None
    """The words of the answer that say it (parts joined by " … "), or None."""
    why_not: str | None = None
    """When it does not count: why, with the words that came closest ("denied: «...»")."""
    spans: tuple = ()
    """Where the evidence is: ``(start, end)`` token spans of the answer's reading (clauses.read)."""


def _parts(alternative: str) -> list[str]:
    return [p.strip() for p in re.split(r"\s\+\s", f" {alternative} ") if p.strip()]


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
        point = KeyPoint(phrase.strip(), [_parts(phrase)] + [_parts(a) for a in rest.split(";") if a.strip()])
        empty = [a.strip() for a in rest.split(";") if a.strip() and not any(
            compile_part(part) for part in _parts(a))]
        if empty:
            problems.append(f"key point {phrase!r}: {empty[0]!r} has no word or symbol to look for")
        unknown = sorted({name for parts in point.alternatives for part in parts
                          for name in re.findall(r"\{([a-z_0-9]+)\}", part) if name not in glossary()})
        if unknown:
            problems.append(f"key point {phrase!r}: no glossary concept {', '.join(unknown)} "
                            "(grader/learner/glossary.py)")
        points.append(point)
    low, high = POINTS
    if not low <= len(points) <= high:
        problems.append(f"{len(points)} key points; write {low} to {high}")
    return points, problems


class _Answer:
    """An answer read once for all the points: its clauses, its index, the question's words."""

    def __init__(self, text: str, question: str):
        self.reading = clauses.read(text)
        self.index = Index(self.reading, glossary())
        asked = clauses.read(question) if question else None
        self.asked_words = set()
        self.asked_index = Index(asked, glossary()) if asked else None
        if asked:
            for t, lemmas in zip(asked.tokens, asked.lemmas):
                if t.kind in ("word", "num") and t.text not in lexicon.FUNCTION_WORDS or t.kind == "op":
                    self.asked_words |= lemmas

    def negator(self, i: int) -> bool:
        """Whether token ``i`` denies what follows it: a negator, or the start of a negating
        phrase ("instead of", "rather than")."""
        toks = self.reading.tokens
        return toks[i].text in lexicon.NEGATORS or any(
            tuple(t.text for t in toks[i:i + len(p)]) == p for p in lexicon.NEGATING_PHRASES)

    def bare_negation(self, start: int, end: int) -> int | None:
        """Where ``start:end`` is only a negation ("not", "instead of", "and not"): its negator."""
        toks = self.reading.tokens
        for i in range(start, end):
            if self.negator(i):
                size = next((len(p) for p in lexicon.NEGATING_PHRASES
                             if tuple(t.text for t in toks[i:i + len(p)]) == p), 1)
                return i if i + size == end else None
        return None

    def open_contrast(self, start: int, end: int) -> int | None:
        """Where ``start:end`` says a contrast that runs on past its end ("instead of log", then
        the part it denies): the contrast's first word."""
        toks = self.reading.tokens
        for i in range(start, end):
            if any(tuple(t.text for t in toks[i:i + len(p)]) == p for p in lexicon.NEGATING_PHRASES):
                return i if self.reading.negated_by[end - 1] == i and self.bare_negation(start, end) is None else None
        return None

    def denies(self, negator: int, span: tuple[int, int]) -> bool:
        """Whether ``negator`` denies a word of ``span``."""
        return any(self.reading.negated_by[i] == negator for i in range(*span))

    def status(self, start: int, end: int, own: frozenset = frozenset()) -> str:
        """How the answer holds the words ``start:end``: claim, condition, fragment, asked,
        negated. Negators in ``own`` (the alternative's own words: "no decay", "instead of
        the gradient") do not deny. The role is its first word's (not a leading comma's)."""
        r = self.reading
        if any(i in r.framed for i in range(start, end)):
            return "negated"  # "It is not true that X needs no cache": the frame denies its own denial too
        for i in range(start, end):
            if self.negator(i):
                break  # the part says the negation itself
            if r.negated[i] and r.negated_by[i] not in own:
                return "negated"
        first = next((i for i in range(start, end) if r.tokens[i].kind != "stop"), start)
        return r.role[first]

    def new_words(self, start: int, end: int) -> bool:
        """Whether ``start:end`` holds a content word or an operator the question did not use
        (``x.grad += g`` says something the question's ``.grad`` did not)."""
        for i in range(start, end):
            t = self.reading.tokens[i]
            if t.kind in ("word", "num") and t.text not in lexicon.FUNCTION_WORDS \
                    and not (self.reading.lemmas[i] & self.asked_words):
                return True
            if t.kind == "op" and t.text in _OPERATORS and t.text not in self.asked_words:
                return True
        return False


def _denial(part) -> bool:
    """Whether every choice of a part is only a negation ("not|never|instead of"), as against
    a part where a negative word is one way of saying a fact ("zero|nothing|0")."""
    words = lexicon.NEGATORS | {w for p in lexicon.NEGATING_PHRASES for w in p} | {"and"}
    return all(e.kind == "word" and e.values & words for choice in part for e in choice)


def _disjoint(spans: list[list[tuple[int, int]]], rank) -> list[tuple[int, int]] | None:
    """One span per part, no two overlapping, each as well placed as can be (parts in order
    of fewest choices first); None when the parts can only share words."""
    order = sorted(range(len(spans)), key=lambda k: len(spans[k]))
    chosen: dict[int, tuple[int, int]] = {}
    for k in order:
        free = [ab for ab in spans[k] if all(ab[1] <= a or b <= ab[0] for a, b in chosen.values())]
        if not free:
            return None
        chosen[k] = min(free, key=rank)
    return [chosen[k] for k in range(len(spans))]


def _judge(answer: _Answer, point: KeyPoint) -> Verdict:
    r = answer.reading
    closest = None  # (rank, why, evidence)
    for alternative in point.compiled():
        found = [answer.index.find_part(part) for part in alternative]
        if not all(found):
            continue
        for s in sorted({r.sentence[a] for a, _ in found[0]}):
            spans = [[(a, b) for a, b in occurrences if r.sentence[a] == s] for occurrences in found]
            if not all(spans):
                continue
            own = frozenset(i for options in spans for a, b in options for i in range(a, b) if answer.negator(i)
                            and (b - a > 1 or answer.bare_negation(a, b) is not None))  # "no decay", "instead of"
            chosen = _disjoint(spans, lambda ab: (_RANK[answer.status(*ab, own)], not answer.new_words(*ab)))
            if chosen is None:
                continue
            # A pure negator ("not", "never", "instead of") is the way's own only where the chosen
            # words say it: a `not` choice of one part must not excuse "doesn't over-weight" where
            # that part was said by other words. A negative fact ("nothing", "no") stays its own.
            said = {i for a, b in chosen for i in range(a, b)}
            own = frozenset(i for i in own if i in said or r.tokens[i].text not in _PURE_NEGATORS)
            states = [answer.status(*ab, own) for ab in chosen]
            for k, ab in enumerate(chosen):  # "{sum} + instead of + {overwrite}": it denies the part after it
                n = answer.bare_negation(*ab) if _denial(alternative[k]) else None  # "zero|nothing": a fact
                if n is not None and not (k + 1 < len(chosen) and answer.denies(n, chosen[k + 1])
                                          and not any(answer.denies(n, c) for c in chosen[:k])):
                    states[k] = "negated"
                n = answer.open_contrast(*ab)  # "instead of log + p": the p it replaces, not another
                if n is not None and (k + 1 < len(chosen) and not answer.denies(n, chosen[k + 1])
                                      or any(answer.denies(n, c) for c in chosen[:k])):
                    states[k] = "negated"
            evidence = " … ".join(r.span(a, b - 1) for a, b in sorted(set(chosen)))
            worst = max(states, key=_RANK.get)
            if _RANK[worst] <= _RANK[clauses.CONDITION] and clauses.CLAIM in states:
                if polarity.inverted(r, chosen, point.stated()[0]):
                    worst = "inverted"
                elif polarity.requantified(r, chosen, point.stated()[1]):
                    worst = "requantified"
                elif any(answer.new_words(a, b) for a, b in chosen):
                    return Verdict(point.point, True, evidence, spans=tuple(sorted(set(chosen))))
                else:
                    worst = "question"
            elif worst == clauses.CONDITION:
                worst = clauses.CONDITION
            rank = _RANK.get(worst, 1)
            if closest is None or rank < closest[0]:
                closest = (rank, _WHY[worst], evidence)
    if closest is None:
        return Verdict(point.point, False, None, "nothing in the answer says it")
    return Verdict(point.point, False, None, f"{closest[1]}: «{closest[2]}»")


def check(points: list[KeyPoint], text: str, question: str = "") -> list[Verdict]:
    """For each point, whether ``text`` says it, with the evidence. ``question`` is the
    question as asked: its own words earn nothing."""
    if not str(text).strip():
        return [Verdict(p.point, False, None, "nothing in the answer says it") for p in points]
    answer = _Answer(text, question)
    return [_judge(answer, p) for p in points]


def hits(points: list[KeyPoint], text: str, question: str = "") -> list[bool]:
    """For each point, whether ``text`` says it."""
    return [v.hit for v in check(points, text, question)]
