"""Whether an instruction says something, or only names a concept with a verb in front.

A terse imperative is how a candidate states a fix: "Recompute P from the log-sum-exp", "Put
eps outside the root", "Detach the hidden state every k steps", "On overflow, skip the step".
Each relates two things: what the verb acts on, and where, how, from what or when. A verb with
one thing and nothing else ("Decouple the weight decay.", "Use bias correction.", "Save the
index.", "Divide by N.") names an action, as a keyword list names a concept: it is a claim only
where its sentence relates it to something else (a condition: "if it overflows, skip the step";
a reason or a purpose: "subtract the max, so nothing overflows").

So a clause-initial verb with no subject counts as a predicate only with two arguments or more
after it: a noun phrase, a prepositional phrase (but ``of``, which stays in its noun phrase), an
adverb of place or manner (``outside``, ``directly``, ``once``, ``evenly``), a formula (an
operator relates its terms), a bracketed aside; or one argument and a setting before it in its
clause ("For stability, subtract the max") or a contrast after it ("accumulate, not overwrite").
Negative imperatives ("never take log(p)", "don't overwrite") are denials, and denials are
statements. Standard library only, plus the word lexicon.
"""
from __future__ import annotations

from backprop_traps.grader.learner import lexicon as lx

OPENERS = frozenset({"then", "just", "also", "always", "first", "simply", "please", "so", "and", "next",
                     "finally", "now", "only", "instead", "again", "but", "otherwise", "or", "second",
                     "third", "lastly", "afterwards", "later", "still", "actually", "basically"})
"""Words that may stand before an imperative's verb: "then clip", "just skip"."""
PARTICLES = frozenset({"outside", "inside", "directly", "once", "twice", "again", "together", "back", "away",
                       "elsewhere", "everywhere", "separately", "instead", "evenly", "equally", "up", "down",
                       "out", "off", "afterwards", "later", "early", "explicitly", "manually", "locally",
                       "globally", "atomically", "deterministically", "consistently"})
"""Adverbs that are an argument of their own ("put eps outside", "spread dout evenly")."""
_NEW_PHRASE = frozenset({"the", "a", "an", "each", "every", "all", "its", "their", "this", "these", "those",
                         "no", "his", "her", "our", "your", "my", "some", "any", "both", "another"})
_FORMULA = frozenset({"+", "-", "*", "/", "^", "=", "+=", "-=", "*=", "/=", ":=", "->", "<-", "<", ">",
                      "<=", ">=", "==", "!=", "~", "@", "|", "%"})
_LINKS = frozenset({"because", "so", "since", "therefore", "hence", "thus", "otherwise", "which", "whereby",
                    "as", "to"})
"""Clause openers that relate an instruction to a reason, a result or a purpose."""


def imperative(toks, segment: list[int], at: int) -> bool:
    """Whether the predicate at token ``at`` opens its segment as an instruction: no subject
    before it, only openers ("then", "just"), and it is a verb, not a modal or a denial."""
    t = toks[at]
    if t.kind != "word" or t.text in lx.AUXILIARIES or t.text in lx.NEGATORS:
        return False
    before = segment[:segment.index(at)]
    return all(toks[i].kind == "word" and toks[i].text in OPENERS for i in before)


def arguments(toks, segment: list[int], at: int) -> int:
    """How many arguments follow the verb at token ``at`` in ``segment``."""
    count, in_phrase, after_prep = 0, False, False
    for i in segment[segment.index(at) + 1:]:
        t = toks[i]
        w = t.text
        if t.kind == "op" and w in _FORMULA or t.kind == "open":
            count += 1  # "divide by 1 - beta^t": a formula relates its terms
            in_phrase, after_prep = True, False
        elif t.kind in ("op", "close", "stop"):
            continue
        elif t.kind == "word" and w in PARTICLES and not after_prep:
            count += 1
            in_phrase = False
        elif t.kind == "word" and w in lx.PREPOSITIONS and w != "of":
            in_phrase, after_prep = False, True
        elif t.kind == "word" and w in _NEW_PHRASE:
            if in_phrase and not after_prep:
                in_phrase = False  # "give the biases no decay": a second object
        elif t.kind == "word" and w in lx.FUNCTION_WORDS and w not in lx.NUMBER_WORDS:
            continue
        elif not in_phrase:
            count += 1
            in_phrase, after_prep = True, False
        else:
            after_prep = False
    return count


def weak(toks, segments: list[list[int]], n: int, at: int) -> bool:
    """Whether segment ``n``'s predicate, the verb at ``at``, is an instruction that only names
    an action: an imperative with one argument, no setting before it in its clause and no
    contrast after it."""
    segment = segments[n]
    if not imperative(toks, segment, at):
        return False
    extra = 0
    if any(toks[s[0]].text in lx.SETTINGS or toks[s[0]].text in lx.CONDITIONS for s in segments[:n]):
        extra += 1  # "On overflow, skip the step"
    if n + 1 < len(segments):
        following = [toks[i].text for i in segments[n + 1][:3]]
        if following[0] in lx.NEGATORS or tuple(following[:2]) in lx.NEGATING_PHRASES or following[0] in _LINKS:
            extra += 1  # "accumulate, not overwrite"; "subtract the max, so nothing overflows"
    return arguments(toks, segment, at) + extra < 2


def related(toks, clauses: list[list[int]]) -> bool:
    """Whether a sentence relates its instructions to something: a condition ("if it overflows,
    skip the step") or a reason, result or purpose ("..., so nothing overflows")."""
    return any(c and (toks[c[0]].text in lx.CONDITIONS or toks[c[0]].text in _LINKS) for c in clauses[1:]) \
        or any(c and toks[c[0]].text in lx.CONDITIONS for c in clauses[:1]) and len(clauses) > 1

