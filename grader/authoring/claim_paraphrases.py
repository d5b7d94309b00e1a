"""Right answers made from the right one: the hired answer said in other ways, which
``grade validate`` proves still hit (grader/authoring/claim_proofs.py).

Each style keeps every claim and changes only how it is said: ``fillers`` (spoken openers and
hesitations: "So, um, ..."), ``numbered`` (one numbered step per sentence), ``bullets``,
``reordered`` (the sentences in reverse order), ``passive`` ("we save the index" -> "the index
is saved") and ``synonyms`` (a glossary phrase for another of the same concept: "square root"
for "sqrt"). Every style is a pure function of the text, so tests feed it generated sentences.
Standard library only, plus the answer reader.
"""
from __future__ import annotations

import re

from backprop_traps.grader.authoring.claim_mutants import Generated, sentences
from backprop_traps.grader.learner import lexicon as lx

STYLES = ("fillers", "numbered", "bullets", "reordered", "passive", "synonyms")
_OPENERS = ("So, um, ", "Basically, ", "Well, ", "I mean, ", "Right, so ", "Uh, ")


def _lower_first(sentence: str) -> str:
    return sentence[0].lower() + sentence[1:] if sentence[:2].istitle() and sentence[1:2].islower() else sentence


def fillers(text: str) -> str:
    """Every other sentence opened with a filler ("So, um, ...", "Basically, ...")."""
    said = sentences(text)
    return " ".join(_OPENERS[n % len(_OPENERS)] + _lower_first(s) if n % 2 == 0 else s
                    for n, s in enumerate(said))


def numbered(text: str) -> str:
    """One numbered step per sentence, one per line."""
    return "\n".join(f"{n + 1}. {s}" for n, s in enumerate(sentences(text)))


def bullets(text: str) -> str:
    """One bullet per sentence."""
    return "\n".join(f"- {s}" for s in sentences(text))


def reordered(text: str) -> str:
    """The sentences in reverse order (each claim stands on its own)."""
    return " ".join(reversed(sentences(text)))


_PARTICIPLES = {"keep": "kept", "hold": "held", "send": "sent", "build": "built", "take": "taken", "give": "given",
                "write": "written", "find": "found", "make": "made", "put": "put", "set": "set", "split": "split",
                "spread": "spread", "get": "got", "choose": "chosen", "throw": "thrown", "lose": "lost"}
_ACTIVE = re.compile(r"\b(?:we|you|I|they) (?P<verb>[a-z]+) (?P<object>(?:the|a|an|its|their|every|each) [\w`'-]+"
                     r"(?: [\w`'-]+)?)(?=[.,;:]| (?:from|in|to|into|with|over|during|before|after|by|at|for)\b)")


def _participle(verb: str) -> str | None:
    if verb in _PARTICIPLES:
        return _PARTICIPLES[verb]
    if verb.endswith("e"):
        return verb + "d"
    if re.search(r"[^aeiou][aeiou][bdgmnpt]$", verb) and len(verb) <= 4:
        return verb + verb[-1] + "ed"
    return verb[:-1] + "ied" if verb.endswith("y") and verb[-2:-1] not in "aeiou" else verb + "ed"


def passive(text: str) -> str:
    """"we save the index in the forward" -> "the index is saved in the forward"."""

    def turn(m: re.Match) -> str:
        verb = m.group("verb")
        if verb in lx.AUXILIARIES or verb in lx.ADVERBS or not lx.can_be_verb(verb) or verb.endswith(("s", "ed")):
            return m.group()
        obj = m.group("object")
        plural = obj.split()[-1].endswith("s") and not obj.split()[-1].endswith("ss")
        return f"{obj} {'are' if plural else 'is'} {_participle(verb)}"

    return _ACTIVE.sub(turn, text)


_SYNONYMS = (("square root", "sqrt"), ("sqrt", "square root"), ("gradient", "derivative"),
             ("forward pass", "forward computation"), ("backward pass", "backprop"), ("argmax", "arg max"),
             ("log-sum-exp", "logsumexp"), ("memory", "VRAM"), ("learning rate", "step size"),
             ("one-hot", "onehot"), ("activations", "intermediate activations"), ("fp32", "float32"),
             ("epsilon", "eps"), ("the maximum", "the max"), ("accumulate", "sum up"), ("recompute", "rerun"))
"""Pairs from the glossary (grader/learner/glossary.py): the same concept in other words."""


def synonyms(text: str) -> str:
    """Each glossary phrase of ``_SYNONYMS`` said as the other phrase of its concept (once each)."""
    table = {}
    for phrase, other in _SYNONYMS:
        table.setdefault(phrase.lower(), other)
    pattern = re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(p) for p in sorted(table, key=len, reverse=True))
                         + r")(?![\w-])", re.I)
    return pattern.sub(lambda m: table[m.group().lower()], text)


_STYLE = {"fillers": fillers, "numbered": numbered, "bullets": bullets, "reordered": reordered,
          "passive": passive, "synonyms": synonyms}


def paraphrases(interview) -> list[Generated]:
    """The hired answer in every style that changes it."""
    hired = interview.hired
    out = []
    for style in STYLES:
        text = _STYLE[style](hired)
        if text.strip() and " ".join(text.split()) != " ".join(hired.split()):
            out.append(Generated(style, None, text))
    return out
