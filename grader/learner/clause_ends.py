"""Where a clause, or a negation inside one, ends when no mark says so.

Spoken answers leave out commas and run statements together; the clause reader
(grader/learner/clauses.py) asks these three questions besides its marks and connectives:

- a condition said without its comma ends where a new subject starts its verb ("if you use
  fan_out you keep the gradients' variance": the claim is "you keep ...");
- a statement after a comma that opens with a subject and its verb is a clause of its own
  ("that's not the optimiser, it's the new layer"), so a denial of the first stays there;
- a negation inside a subject ends at the main verb that follows its own ("training that
  validation does not follow | is BatchNorm in training mode").

Standard library only, plus the word lexicon (grader/learner/lexicon.py).
"""
from __future__ import annotations

from backprop_traps.grader.learner import lexicon as lx
from backprop_traps.grader.learner.said import Token

_PERSONS = frozenset({"i", "we", "you", "they"})


def main_clause_starts(toks: list[Token], current: list[int], word, before, after) -> bool:
    """A condition said without its comma ends where a new subject starts its verb: "if you
    use fan_out you keep the gradients' variance", "when we add a layer we see a jump"."""
    return bool(current) and toks[current[0]].text in lx.CONDITIONS and word in _PERSONS \
        and any(lx.can_be_verb(toks[j].text) for j in current[2:]) \
        and before is not None and before.kind in ("word", "num") and before.text not in lx.PREPOSITIONS \
        and after is not None and after.kind == "word" and after.text != "to" and lx.can_be_verb(after.text)


def spliced(word, before, after) -> bool:
    """A new statement after a comma ("that's not the optimiser, it's the new layer", "..., we
    zero the gain"): its own clause, so that a denial of the first ("is not the ...") stays there."""
    if before is None or before.text != "," or after is None or after.kind != "word":
        return False
    if word in _PERSONS | {"it", "he", "she"}:
        return after.text in lx.AUXILIARIES or lx.can_be_verb(after.text) and after.text not in lx.FUNCTION_WORDS
    return word in ("there", "this") and after.text in lx.AUXILIARIES


_MAIN_VERBS = frozenset({"is", "are", "was", "were", "means", "indicates", "suggests", "implies", "signals"})
"""Finite verbs that, right after a denied verb, start the sentence's main predicate."""


def subject_clause_ends(toks: list[Token], clause: list[int]) -> set[int]:
    """Where a negation inside a subject ends: "training that validation does not follow is
    BatchNorm in training mode", "a loss that never falls means ...". Two finite verbs in a row
    ("does not follow | is") close the clause that holds the first, so the main verb after it is
    not denied. Positions in ``clause``; only right after a single denied word (a verb with an
    object, "does not mean the batch is repeated", is left alone: there the clause is its object)."""
    words = [toks[i].text if toks[i].kind == "word" else None for i in clause]
    ends = set()
    for n in range(1, len(words) - 2):
        negated_verb = words[n] == "never" or words[n] == "not" and words[n - 1] in lx.AUXILIARIES
        verb = words[n + 1]
        if negated_verb and verb and verb not in lx.FUNCTION_WORDS and lx.can_be_verb(verb) \
                and words[n + 2] in _MAIN_VERBS:
            ends.add(n + 2)
        elif words[n] in ("not", "never") and verb and verb.endswith("ing") and lx.can_be_verb(verb):
            # a denied gerund is a subject: "validation not tracking noisy training means BatchNorm ..."
            main = next((m for m in range(n + 2, len(words)) if words[m] in _MAIN_VERBS), None)
            if main is not None:
                ends.add(main)
    return ends


def regardless(toks: list[Token], sentence: list[int], n: int) -> bool:
    """"whether z > 0 or not": a "whether" at position ``n`` of ``sentence`` whose "or not" (or
    "or no") follows in the sentence opens a clause of its own, which claims nothing."""
    words = [toks[i].text for i in sentence[n + 1:]]
    return any(a == "or" and b in ("not", "no") for a, b in zip(words, words[1:]))
