"""Wrong answers made from the right one: mutants of the hired answer's claims, and its key
terms dressed up as claim-free text. ``grade validate`` proves that none of them hits.

A hand-written corpus shows the wrong answers its author imagined; these are derived, for every
key point of every question, from the sentence of the hired answer that says the point (its
*claim*; grader/authoring/claim_proofs.py):

- **mutants** (each one sentence, each denying or changing what the claim says):
  ``negated`` (a negation inserted at each clause's verb, or an existing one removed),
  ``prohibited`` (the claim under a modal prohibition: "there's no need to ...", "it is not
  true that ..."), ``antonym`` (every direction word swapped for its opposite:
  grader/learner/directions.py), ``quantity`` (every quantity times 10) and ``condition`` (a
  condition turned round: ``if`` to ``unless``, ``z > 0`` to ``z <= 0``);
- **dresses** (the evidence words of the claims, asserting nothing): ``pipes``, ``slashes``,
  ``and-chain``, ``hashtags``, ``let's talk``, ``question of`` and ``mind-map``.

Every operator is a pure function of its text (None where it does not apply), so tests feed it
generated sentences (tests/learner/test_claim_generator.py). Standard library only, plus the answer
reader (grader/learner/).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from backprop_traps.grader.learner import clauses, directions, keypoints
from backprop_traps.grader.learner import lexicon as lx

MUTANTS = ("negated", "prohibited", "antonym", "quantity", "condition")
DRESSES = ("pipes", "slashes", "and-chain", "hashtags", "let's talk", "question of", "mind-map")


@dataclass(frozen=True)
class Generated:
    """One generated answer."""
    kind: str
    """The operator or dress that made it (``MUTANTS``, ``DRESSES``, or a paraphrase style)."""
    point: int | None
    """The key point whose claim it was made from (None: made from every point's)."""
    text: str


_TRUE_AUX = frozenset({"is", "are", "was", "were", "be", "am", "can", "could", "will", "would", "shall", "should",
                       "may", "might", "must", "do", "does", "did", "has", "have", "had"})
_CONTRACTED = {"is": "isn't", "are": "aren't", "was": "wasn't", "were": "weren't", "do": "don't",
               "does": "doesn't", "did": "didn't", "has": "hasn't", "have": "haven't", "must": "mustn't",
               "should": "shouldn't", "can": "can't", "could": "couldn't", "would": "wouldn't", "will": "won't"}
_UNDO = {"not": "", "never": "always", "no": "some", "nothing": "everything", "none": "all", "without": "with",
         "cannot": "can"}
_PAST = {"kept": "keep", "lost": "lose", "won": "win", "held": "hold", "left": "leave", "sent": "send",
         "built": "build", "spent": "spend", "fed": "feed", "made": "make", "took": "take", "gave": "give",
         "went": "go", "came": "come", "said": "say", "got": "get", "became": "become", "found": "find",
         "forgot": "forget", "threw": "throw", "wrote": "write", "chose": "choose", "knew": "know"}


def _edit(text: str, edits: list[tuple[int, int, str]]) -> str:
    """``text`` with each ``(start, end, replacement)`` applied (spans do not overlap)."""
    for start, end, new in sorted(set(edits), reverse=True):
        text = text[:start] + new + text[end:]
    return " ".join(text.split())


def _in_code(text: str, at: int) -> bool:
    """Whether character ``at`` of ``text`` is inside a `code` span."""
    return text[:at].count("`") % 2 == 1


def _base(word: str) -> str:
    """The bare infinitive of a verb form (``keeps``: keep, ``stored``: store)."""
    if word in _PAST:
        return _PAST[word]
    verbs = sorted((lemma for lemma in lx.lemmas(word) if lemma != word and lx.can_be_verb(lemma)),
                   key=lambda x: (-len(x) if word.endswith("ed") else len(x)))
    return verbs[0] if verbs else word


def _negation(reading, at: int, style: int) -> tuple[int, int, str] | None:
    """The edit that negates the predicate at token ``at``, or that removes its negation."""
    toks, text = reading.tokens, reading.text
    t = toks[at]
    near = [i for i in range(max(0, at - 2), min(len(toks), at + 3)) if toks[i].text in _UNDO]
    if near:  # already denied: the mutant asserts it ("does not remember" -> "does remember")
        i = near[0]
        return toks[i].start, toks[i].end, _UNDO[toks[i].text]
    if _in_code(text, t.start):
        return None  # a formula's own words ("log Σ exp") are not the sentence's verb
    if t.kind == "op":
        return (t.start, t.end, " is not ") if t.text == "=" else None
    if t.kind == "num":  # a terse fact: "bf16 gradients 2" -> "bf16 gradients not 2"
        return t.start, t.start, "not "
    if t.kind != "word" or text[t.start:t.end].lower() != t.text:
        return None  # "I'd": a contraction's word has no span of its own to negate
    word = text[t.start:t.end]
    if t.text in _TRUE_AUX:
        if style % 2 and t.text in _CONTRACTED and word.islower():
            return t.start, t.end, _CONTRACTED[t.text]
        return t.start, t.end, word + (" not" if t.text != "can" else "not")
    first = at == 0 or toks[at - 1].kind == "stop" or toks[at - 1].text in ("then", "just", "so", "and", "first")
    if first and t.text in lx.IMPERATIVES | lx.KIT_VERBS:  # an instruction: "never subtract"
        lead = "never " if style % 2 else "don't "
        if word[:1].isupper():
            return t.start, t.end, lead.capitalize() + word.lower()
        return t.start, t.start, lead
    base = _base(t.text)
    if t.text.endswith("ed") or t.text in _PAST:
        aux = "did not"
    elif t.text.endswith("s") and not t.text.endswith("ss"):
        aux = "does not"
    else:
        aux = "do not"
    if style % 2:
        aux = aux.replace(" not", "n't")
    return t.start, t.end, f"{aux} {base}"


def negate(sentence: str, style: int = 0) -> str | None:
    """``sentence`` with every clause's statement negated (or its negation removed)."""
    reading = clauses.read(sentence)
    edits = [e for e in (_negation(reading, at, style) for at in reading.predicates) if e]
    out = _edit(sentence, edits) if edits else None
    return out if out and out != " ".join(sentence.split()) else None


_FRAMES = ("There's no need to say that {}", "It is not true that {}", "Nobody should claim that {}",
           "You mustn't believe that {}")


def prohibit(sentence: str, style: int = 0) -> str | None:
    """``sentence`` under a frame that denies it: "It is not true that ...", "No need to say ..."."""
    body = sentence.strip()
    if not body:
        return None
    body = body[0].lower() + body[1:] if body[:2] != body[:2].upper() else body
    return _FRAMES[style % len(_FRAMES)].format(body)


def swap_directions(sentence: str) -> str | None:
    """``sentence`` with every direction word said the other way (``outside`` -> ``inside``,
    ``accumulate`` -> ``overwrite``, ``+=`` -> ``=``)."""
    reading = clauses.read(sentence)
    edits = []
    for t in reading.tokens:
        if t.kind == "op" and t.text == "+=":
            edits.append((t.start, t.end, "="))
        elif t.kind == "word":
            other = directions.opposite(t.text, roles=True)
            word = sentence[t.start:t.end]
            if other and word.lower() == t.text and not _in_code(sentence, t.start):
                edits.append((t.start, t.end, other.capitalize() if word[:1].isupper() else other))
    return _edit(sentence, edits) if edits else None


_TENFOLD_WORDS = {"two": "twenty", "three": "thirty", "four": "forty", "five": "fifty", "six": "sixty",
                  "eight": "eighty", "ten": "a hundred", "sixteen": "a hundred and sixty", "twice": "twenty times",
                  "half": "a twentieth", "third": "thirtieth"}
_ONE_BEFORE = frozenset({"bit", "byte", "extra", "more", "float", "thread", "writer", "rule", "copy", "pass",
                         "forward", "gradient", "norm", "number", "value", "element", "step"})


def _tenfold(number: str) -> str | None:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(?:e([-+]?\d+))?", number.lower())
    if not m:
        return None
    if m.group(2) is not None:
        return f"{m.group(1)}e{int(m.group(2)) + 1}"
    value = float(m.group(1)) * 10
    return str(int(value)) if value == int(value) else f"{value:g}"


def scale_quantities(sentence: str) -> str | None:
    """``sentence`` with every quantity ten times larger (``16 bytes`` -> ``160 bytes``,
    ``1e-3`` -> ``1e-2``, ``two`` -> ``twenty``, ``one bit`` -> ``ten bits``)."""
    toks = clauses.read(sentence).tokens
    edits = []
    for n, t in enumerate(toks):
        raw = sentence[t.start:t.end]
        nxt = toks[n + 1].text if n + 1 < len(toks) else ""
        if t.kind == "num" and raw[:1].isdigit():
            new = _tenfold(raw)
            if new:
                edits.append((t.start, t.end, new))
        elif t.kind == "word" and raw.lower() == t.text and t.text in _TENFOLD_WORDS and not (
                t.text == "third" and (n == 0 or toks[n - 1].text not in ("a", "one"))):  # "Third, ..."
            edits.append((t.start, t.end, _TENFOLD_WORDS[t.text]))
        elif t.kind == "word" and t.text in ("one", "a") and raw.isalpha() and nxt in _ONE_BEFORE and (
                t.text == "one" or nxt == "bit"):
            edits.append((t.start, t.end, "ten"))
    return _edit(sentence, edits) if edits else None


_RELATION_OTHER = {">": "<=", "<": ">=", ">=": "<", "<=": ">", "≥": "<", "≤": ">"}
_CONDITION_OTHER = {"if": "unless", "unless": "if", "whenever": "unless", "only": "except"}


def invert_conditions(sentence: str, style: int = 0) -> str | None:
    """``sentence`` with its conditions turned round: ``if`` <-> ``unless``, ``z > 0`` ->
    ``z <= 0``, and a ``when``/``where`` clause negated ("where windows do not overlap")."""
    reading = clauses.read(sentence)
    edits = []
    for i, t in enumerate(reading.tokens):
        raw = sentence[t.start:t.end]
        if t.kind == "op" and raw in _RELATION_OTHER:
            edits.append((t.start, t.end, _RELATION_OTHER[raw]))
        elif t.kind == "word" and reading.role[i] == clauses.CONDITION and t.text in _CONDITION_OTHER \
                and raw.isalpha():
            edits.append((t.start, t.end, _CONDITION_OTHER[t.text].capitalize() if raw[0].isupper()
                          else _CONDITION_OTHER[t.text]))
    if not edits:
        for at in reading.predicates:
            if reading.role[at] == clauses.CONDITION:
                edit = _negation(reading, at, style)
                if edit:
                    edits.append(edit)
    return _edit(sentence, edits) if edits else None


OPERATORS = {"negated": negate, "prohibited": prohibit, "antonym": lambda s, style=0: swap_directions(s),
             "quantity": lambda s, style=0: scale_quantities(s), "condition": invert_conditions}


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` as the answer reader splits them, each with its full stop."""
    reading = clauses.read(text)
    count = max(reading.sentence, default=-1) + 1
    found = [reading.sentence_text(s).strip(' "') for s in range(count)]
    return [s if s.endswith((".", "?", "!")) else s + "." for s in found if s]


_OPENERS = frozenset({"and", "but", "so", "then", "which", "or", "also", "because", "since", "first", "second",
                      "third", "finally", ","})


def _claim(reading, spans) -> str:
    """The clauses of ``reading`` from the first that holds one of ``spans`` to the last."""
    held = sorted({reading.clause[i] for a, b in spans for i in range(a, b) if reading.clause[i] >= 0})
    if not held:
        return ""
    members = [i for i, c in enumerate(reading.clause) if held[0] <= c <= held[-1]]
    while len(members) > 1 and reading.tokens[members[0]].text in _OPENERS:
        members = members[1:]  # "and ties need one rule": the claim, not its link to the last
    text = reading.span(members[0], members[-1]).strip(' "`,;:')
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "?", "!")) else text + "."


def claims(interview) -> dict[int, str]:
    """For each key point: the clauses of the hired answer that say it (cut from their sentence
    where they say it alone; else the sentence; points only several sentences say have none)."""
    reading = clauses.read(interview.hired)
    found = {}
    said = sentences(interview.hired)
    for k, (point, verdict) in enumerate(zip(interview.key_points, keypoints.check(
            interview.key_points, interview.hired, interview.question))):
        stretch = _claim(reading, verdict.spans) if verdict.hit else ""
        for candidate in [stretch] + said:
            if candidate and keypoints.check([point], candidate, interview.question)[0].hit:
                found[k] = candidate
                break
    return found


def mutants(interview) -> list[Generated]:
    """Every operator applied to every point's claim (where it changes the claim)."""
    out = []
    for k, sentence in claims(interview).items():
        reach = _evidence_words(interview.key_points[k], sentence, interview.question)
        for kind, operator in OPERATORS.items():
            text = operator(sentence, k)
            if text and text != " ".join(sentence.split()) and (kind == "prohibited" or _touches(sentence, text, reach)):
                out.append(Generated(kind, k, text))
    return out


_REACH = 3
"""How many words either side of a point's evidence a mutation may change and still be about it."""


def _evidence_words(point, sentence: str, question: str) -> set[int]:
    """The word positions of ``sentence`` (split on spaces) near the words that say ``point``."""
    reading = clauses.read(sentence)
    verdict = keypoints.check([point], sentence, question)[0]
    chars = {c for a, b in verdict.spans for i in range(max(0, a - _REACH), min(len(reading.tokens), b + _REACH))
             for c in range(reading.tokens[i].start, reading.tokens[i].end)}
    words, at = set(), 0
    for n, w in enumerate(sentence.split()):
        at = sentence.index(w, at)
        if any(c in chars for c in range(at, at + len(w))):
            words.add(n)
        at += len(w)
    return words


def _touches(before: str, after: str, reach: set[int]) -> bool:
    """Whether the words ``after`` changes in ``before`` include one in ``reach``."""
    import difflib
    old, new = before.split(), after.split()
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag != "equal" and (set(range(i1, max(i2, i1 + 1))) & reach):
            return True
    return False


_NOT_TERMS = lx.FUNCTION_WORDS | lx.AUXILIARIES | lx.SUBJECT_PRONOUNS
_ARITHMETIC = frozenset({"+", "-", "*", "/", "^", "@", "minus", "plus", "times", "squared"})
"""A run of terms with one of these is a formula, and a formula claims (a verb or a relation too)."""


def key_terms(interview) -> dict[int, list[str]]:
    """For each key point, the words of the hired answer that say it (its evidence), cut into
    the runs of content words and symbols between its function words."""
    reading = clauses.read(interview.hired)
    verbs = set(reading.predicates)
    found = {}
    for k, verdict in enumerate(keypoints.check(interview.key_points, interview.hired, interview.question)):
        runs, run = [], []
        for a, b in verdict.spans:
            for i in range(a, b + 1):
                t = reading.tokens[i] if i < b else None
                if t is not None and t.kind in ("word", "num", "op") and t.text not in _NOT_TERMS \
                        and t.text not in clauses.RELATIONS and i not in verbs and not lx.only_verb(t.text):
                    run.append(i)
                    continue
                if run and not any(reading.tokens[j].text in _ARITHMETIC for j in run):  # a formula claims
                    runs.append(reading.span(run[0], run[-1]).strip(" `*\"'"))
                run = []
        terms = [r for r in dict.fromkeys(runs) if r]
        if terms:
            found[k] = terms
    return found


def dress(terms: list[str], kind: str) -> str:
    """``terms`` set in one of the ways that assert nothing (``DRESSES``)."""
    terms = [t for t in terms if t] or ["nothing"]
    if kind == "pipes":
        return " | ".join(terms)
    if kind == "slashes":
        return " / ".join(terms)
    if kind == "and-chain":
        return " and ".join(terms) + "."
    if kind == "hashtags":
        return " ".join("#" + w for t in terms for w in re.findall(r"\w+", t))
    if kind == "let's talk":
        head = ", ".join(terms[:-1])
        return f"Let's talk about {head} and {terms[-1]}." if head else f"Let's talk about {terms[-1]}."
    if kind == "question of":
        rest = "".join(f", and {t}" for t in terms[2:])
        second = terms[1] if len(terms) > 1 else "it"
        return f"There is the question of {terms[0]} and where {second} goes{rest}."
    if kind == "mind-map":
        return "\n".join([terms[0]] + [("  " * (1 + n % 2)) + "- " + t for n, t in enumerate(terms[1:])])
    raise ValueError(f"no dress {kind!r}")


def dresses(interview) -> list[Generated]:
    """Each point's key terms, and all of them together, in every dress."""
    terms = key_terms(interview)
    out = [Generated(kind, k, dress(words, kind)) for k, words in terms.items() for kind in DRESSES]
    every = [w for k in sorted(terms) for w in terms[k]]
    out += [Generated(kind, None, dress(every, kind)) for kind in DRESSES]
    return out
