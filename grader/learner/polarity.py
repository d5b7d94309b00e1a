"""Denials that words alone do not show: a frame that denies a whole sentence, and a claim
that states the other side of a point's direction.

- **A negation's stretch** (``negations``, for the clause reader grader/learner/clauses.py):
  from a negator (``not``, ``no``, ``never``, ``without``, ``n't``...) or a contrast (``instead
  of``, ``rather than``) to the end of its stretch of the clause; a clause-wide denial where
  the clause says its point is not needed ("n_k / N is not needed", "adds nothing").
- **A denying frame** scopes over everything after it, commas and conditions included: "It is
  not true that, where windows overlap, the gradients add up", "There's no need to say that ...",
  "Nobody should claim that ...", "You mustn't believe that ...", "I doubt that ...", "I'm
  sceptical that ...". The clause reader
  (grader/learner/clauses.py) marks a negator's stretch up to the next comma; a frame's stretch
  runs to the end of its sentence, or to a connective that starts a claim of its own ("but",
  "because", "so"...).
- **An inverted direction**: a point whose phrase states a side (``outside``, ``accumulate``,
  ``higher``, ``first``, ``input``; grader/learner/directions.py) is denied by a claim whose
  clauses say the other side and not this one ("eps goes *inside* the root", "the variance is
  *lower*", "the *last* maximum wins"). Negated words do not count ("not inside").

Standard library only, plus the answer reader.
"""
from __future__ import annotations

import re

from backprop_traps.grader.learner import clause_ends as ends
from backprop_traps.grader.learner import directions
from backprop_traps.grader.learner import lexicon as lx
from backprop_traps.grader.learner.said import Token

_DENYING = frozenset({"unnecessary", "unneeded", "needless", "pointless", "irrelevant", "overkill",
                      "untrue", "false", "optional", "myth"})
_COPULAS = frozenset({"is", "are", "was", "were", "be", "been"})
_EMPTY_VERBS = frozenset({"add", "adds", "tell", "tells", "give", "gives", "buy", "buys", "contribute",
                          "contributes", "offer", "offers", "say", "says", "show", "shows"})
_SIDES = frozenset({"=", "->", "=>"})
"""Relations whose right side is a claim of its own, out of a negation's reach on the left."""
_NOT_NEGATIONS = (("not", "only"), ("not", "just"), ("no", "matter"), ("nothing", "but"),
                  ("not", "until"), ("not", "least"), ("no", "doubt"), ("without", "doubt"))


def negations(toks: list[Token], clause: list[int]) -> list[int]:
    """For each token of ``clause``: the index of the negator before it, in its stretch, that
    denies it, or -1."""
    words = [toks[i].text for i in clause]
    flags, active = [], -1
    denied = next((i for i, w in zip(clause, words) if w in _DENYING), -1)
    for n, w in enumerate(words):  # "n_k / N is not needed", "per-layer norms add nothing"
        if any(x in lx.CONDITIONS for x in words[1:n]):
            break  # "you need a Function *when* the derived backward isn't the one you want": its own clause
        if w in lx.NEGATORS and w != "without" and n > 0 and (
                words[n - 1] in lx.AUXILIARIES and (w in ("nothing", "no") and words[n - 1] in _COPULAS or n > 1 and any(
                    x in lx.NEED_WORDS for x in words[n + 1:n + 3]))
                or w == "nothing" and words[n - 1] in _EMPTY_VERBS):
            denied = clause[n]
            break
    closes = ends.subject_clause_ends(toks, clause)
    for n, i in enumerate(clause):
        t = toks[i]
        if t.kind == "stop" and t.text == "," or n in closes or t.kind == "op" and t.text in _SIDES:
            active = -1  # a relation's other side is not denied: "validation not tracking = BatchNorm ..."
        if active >= 0 and toks[active].text == "without" and (t.text in lx.SUBJECT_PRONOUNS or t.text in lx.AUXILIARIES):
            active = -1  # "without an overflow it doubles": "without" denies a phrase, not the clause
        flags.append(active if active >= 0 else denied)
        pair = tuple(words[n:n + 2])
        if pair in _NOT_NEGATIONS and not (pair[0] == "not" and "also" not in words[n:] and "but" not in words[n:]):
            continue
        if t.text in lx.NEGATORS or any(tuple(words[n:n + len(p)]) == p for p in lx.NEGATING_PHRASES):
            active = i
    for n in range(1, len(words)):  # "checkpointing recomputes nothing": the verb is denied by its object
        if words[n] in ("nothing", "none") and flags[n - 1] < 0 and toks[clause[n - 1]].kind == "word" \
                and words[n - 1] not in lx.AUXILIARIES and words[n - 1] not in lx.FUNCTION_WORDS \
                and lx.can_be_verb(words[n - 1]) and not lx.participle(words[n - 1]):
            flags[n - 1] = clause[n]
    return flags


_FRAME = re.compile(
    r"^(?:(?:so|well|and|but|no|okay|ok) )*(?:"
    r"(?:it|that|this) is (?:not|never) (?:true|the case|correct|right|so|how it works)(?: that)?"
    r"|(?:it|that) is (?:false|untrue|a myth|wrong|a mistake) (?:that|to say)"
    r"|there is no (?:need|reason|point) (?:to|in) (?:say|claim|believe|think|assume|pretend)\w*(?: that)?"
    r"|(?:you|we|one|i|they) (?:do not|does not|did not|never|must not|should not|need not|can not|will not"
    r"|would not|shall not)(?: (?:need|have|ever))?(?: to)? (?:say|claim|believe|think|assume|pretend)\w*(?: that)?"
    r"|(?:nobody|no one|none of us)(?: (?:should|would|will|can|could|must|ever))? "
    r"(?:say|claim|believe|think|assume|pretend)\w*(?: that)?"
    r"|(?:do not|never) (?:say|claim|believe|think|assume|pretend)(?: that)?"
    r"|not (?:true|so|really)"
    r"|(?:i|we) (?:really |rather |kind of |somewhat )?(?:doubt|question|dispute)(?: (?:that|whether|if))?"
    r"|(?:i|we) (?:am|are) (?:skeptical|sceptical|doubtful|unconvinced)(?: (?:that|whether|if|of))?"
    r"|(?:it|that) is (?:doubtful|unlikely|questionable|debatable) (?:that|whether|if)"
    r")(?= |$)")
_OWN_CLAIM = frozenset({"but", "whereas", "however", "although", "though", "yet", "instead", "rather"})
"""Connectives after which a sentence says something of its own, out of the frame's reach."""
_NEGATORS = frozenset({"not", "no", "never", "nobody", "none", "false", "untrue", "myth", "wrong", "mistake"})


def frame(words: list[str]) -> tuple[int, int] | None:
    """Where a sentence (its words, as read) opens with a frame that denies what follows: the
    frame's negator and the number of words the frame takes; None without one."""
    m = _FRAME.match(" ".join(words))
    if not m:
        return None
    size = len(m.group().split())
    if size >= len(words):
        return None
    negator = next((n for n, w in enumerate(words[:size]) if w in _NEGATORS), 0)
    return negator, size


def deny_framed(reading, sentence: list[int]) -> None:
    """Mark the tokens a denying frame at the start of ``sentence`` denies (see the module)."""
    found = frame([reading.tokens[i].text for i in sentence])
    if found is None:
        return
    negator, size = found
    by = sentence[negator]
    for n, i in enumerate(sentence[size:]):
        if n and reading.tokens[i].text in _OWN_CLAIM:
            break
        reading.negated[i], reading.negated_by[i] = True, by
        reading.framed.add(i)
    for i in sentence[:size]:
        reading.role[i] = "fragment"


_REACH = (3, 5)
"""How far a direction word may stand before and after the words that say the point."""


def inverted(reading, spans, sides: frozenset) -> bool:
    """Whether, near ``spans`` (in their clauses), the answer states the other side of a
    direction in ``sides`` and not that side itself (negated words aside)."""
    if not sides:
        return False
    held = {reading.clause[i] for a, b in spans for i in range(a, b) if reading.clause[i] >= 0}
    first, last = min(a for a, _ in spans) - _REACH[0], max(b for _, b in spans) + _REACH[1]
    said = {reading.tokens[i].text for i in range(max(0, first), min(len(reading.tokens), last))
            if reading.clause[i] in held and not reading.negated[i] and reading.tokens[i].kind in ("word", "op")}
    return any(w not in sides and directions.opposite(w) in sides and directions.opposite(w) not in said
               for w in said)


_ABOUT = frozenset({"near", "around", "about", "roughly", "approximately", "~", "circa"})


def unit(tokens, i: int) -> str | None:
    """What the quantity at token ``i`` counts: the word after it ("16 *bytes*", "0/1
    *knapsack*"), else the approximation before it ("*near* 1e-3"); None when neither says."""
    from backprop_traps.grader.learner import lexicon
    after = tokens[i + 1] if i + 1 < len(tokens) else None
    if after is not None and after.kind == "word" and after.text not in (
            lexicon.PREPOSITIONS | lexicon.DETERMINERS | lexicon.AUXILIARIES | {"and", "or", "times", "x"}):
        return min(lexicon.lemmas(after.text), key=len)
    before = tokens[i - 1] if i else None
    return "~" if before is not None and before.text in _ABOUT else None


_NUMBER_WORDS = {"zero": 0.0, "one": 1.0, "two": 2.0, "three": 3.0, "four": 4.0, "five": 5.0, "six": 6.0,
                 "seven": 7.0, "eight": 8.0, "nine": 9.0, "ten": 10.0, "sixteen": 16.0, "twenty": 20.0,
                 "thirty": 30.0, "hundred": 100.0, "thousand": 1000.0, "twice": 2.0, "half": 0.5, "single": 1.0,
                 "third": 1 / 3, "thirtieth": 1 / 30, "twentieth": 1 / 20}


def quantity(token) -> float | None:
    if token.kind == "num":
        try:
            return float(token.text)
        except ValueError:
            return None
    return _NUMBER_WORDS.get(token.text) if token.kind == "word" else None


def _counts(tokens, i: int) -> bool:
    """Whether token ``i`` counts something: not "one" or "zero" (a pronoun, ZeRO), nor a number
    right after a name (an index: "ZeRO 3", "stage 2")."""
    if tokens[i].text in ("zero", "one", "single"):
        return False
    before = tokens[i - 1] if i else None
    from backprop_traps.grader.learner import lexicon
    return not (before is not None and before.kind == "word" and tokens[i].kind == "num"
                and before.text not in lexicon.FUNCTION_WORDS | lexicon.PREPOSITIONS
                and before.text not in ("roughly", "approximately", "exactly", "only", "just"))


_MAGNITUDE = 5.0
"""Quantities this far apart (a factor) are different claims: 16 bytes and 160, 1e-3 and 1e-2;
12 bytes beside 16, or 4 + 4 beside 8, are the same claim counted another way."""


def requantified(reading, spans, quantities: frozenset) -> bool:
    """Whether every quantity said inside ``spans`` or right beside one ("*160* bytes", "a
    0/*10* knapsack", "around *1e-2*") is an order of magnitude away from the figure the point's
    phrase states for the same thing (``quantities``: (unit, value) pairs; "16 bytes", "near 1e-3")."""
    if not quantities:
        return False
    near = {i for a, b in spans for i in range(max(0, a - 1), min(len(reading.tokens), b + 1))
            if not reading.negated[i] and _counts(reading.tokens, i)}
    said = {(unit(reading.tokens, i), quantity(reading.tokens[i])) for i in near}
    if any(q == s for _, q in said for _, s in quantities):
        return False  # the phrase's own figure is said ("16 bytes per param: 2 for grads")
    units = {u for u, _ in quantities}
    said = {(u, q) for u, q in said if q is not None and u in units}

    def apart(q: float, s: float) -> bool:
        if q == s:
            return False
        if q <= 0 or s <= 0:
            return True
        return max(q / s, s / q) >= _MAGNITUDE

    return bool(said) and all(apart(q, s) for u, q in said for v, s in quantities if u == v)
