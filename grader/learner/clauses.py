"""Which words of an answer it claims: sentences, clauses, negation, questions and lists.

A key point counts only where the answer asserts it, so each token gets a role and a
polarity:

- **claim**: in a clause that states something, i.e. has a predicate: a verb in a verbal
  place (``the scatter accumulates``, ``we sum``, ``skip the step``, ``decay decoupled from
  the gradient``), a copula or modal (``is``, ``must``), or a relation (``=``, ``+=``, ``->``);
- **condition**: in an ``if``/``when``/``where``/``unless`` clause (it counts with the claim it
  conditions: "where windows overlap, the gradients add up"; a consequence said without its verb,
  "if the loss is too smooth, probably the same batch", is still the claim);
- **asked**: in a question, or an embedded one ("why is decay decoupled", "you ask what dx is");
- **context**: a clause without a predicate in a sentence that has a claim ("One extra QKᵀ,
  yet faster"): like a condition, it counts with the claim;
- **fragment**: a sentence without a predicate ("Bias correction, 1 - beta. Decoupled.");
- **listed**: the items of a list of words ("It needs bias correction, decoupled decay, eps
  outside, a master copy"): only an item with its own predicate is claimed.

``negated`` is true from a negator (``not``, ``no``, ``never``, ``without``, ``n't``...) or a
contrast (``instead of``, ``rather than``) to the end of its stretch of the clause (the next
comma or clause boundary), so "not overwritten but accumulated" negates only "overwritten", and
"eps inside the root instead of outside" only "outside". A condition with a negation whose
claim names a failure ("if you don't subtract the max, exp overflows") is read as the advice
it implies. Where a clause or a negation ends with no mark to say so (a condition without its
comma, a comma splice, a negation inside a subject) is grader/learner/clause_ends.py's to say.
Standard library only, plus the word lexicon (grader/learner/lexicon.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from backprop_traps.grader.learner import clause_ends as ends, lexicon as lx
from backprop_traps.grader.learner.said import Token, tokens

CLAIM, CONDITION, CONTEXT, ASKED, FRAGMENT, LISTED = (
    "claim", "condition", "context", "asked", "fragment", "listed")
RELATIONS = frozenset({"=", "+=", "-=", "*=", "/=", ":=", "->", "<-", "~", "<=", ">=", "<", ">", "!=", "==", "⊥"})
_SPLIT = frozenset({"but", "because", "whereas", "while", "although", "though", "however", "hence",
                    "therefore", "thus", "otherwise", "which", "whereby", "so", "then", "since", "yet"})
_ELLIPTIC = frozenset({"but", "and", "or", "then", "so", "not", "nor", "yet"})
_ASKING = frozenset({"ask", "asking", "asked", "explain", "know", "wonder", "tell", "describe", "say",
                     "show", "derive", "walk", "want", "wants"})
_BAD = frozenset({"overflow", "underflow", "nan", "inf", "wrong", "break", "fail", "lose", "lost",
                  "explode", "diverge", "garbage", "bug", "blow", "crash", "error", "vanish", "freeze",
                  "stall", "stop", "miss", "race", "leak", "drift", "nothing", "zero", "never"})
_DENYING = frozenset({"unnecessary", "unneeded", "needless", "pointless", "irrelevant", "overkill",
                      "untrue", "false", "optional", "myth"})
_COPULAS = frozenset({"is", "are", "was", "were", "be", "been"})
_EMPTY_VERBS = frozenset({"add", "adds", "tell", "tells", "give", "gives", "buy", "buys", "contribute",
                          "contributes", "offer", "offers", "say", "says", "show", "shows"})
_NOT_NEGATIONS = (("not", "only"), ("not", "just"), ("no", "matter"), ("nothing", "but"),
                  ("not", "until"), ("not", "least"))


@dataclass
class Reading:
    """An answer's tokens, and for each: its sentence, role, polarity and lemmas."""
    text: str
    tokens: list[Token]
    sentence: list[int]
    role: list[str]
    negated: list[bool]
    negated_by: list[int]
    """For a negated token, the index of the negator that denies it (else -1)."""
    lemmas: list[frozenset]

    def span(self, first: int, last: int) -> str:
        """The original text from token ``first`` to token ``last``, both included."""
        return " ".join(self.text[self.tokens[first].start:self.tokens[last].end].split())

    def sentence_text(self, index: int) -> str:
        members = [i for i, s in enumerate(self.sentence) if s == index]
        return self.span(members[0], members[-1]) if members else ""


def _words(toks: list[Token], idx: list[int]) -> list[str]:
    return [toks[i].text for i in idx]


def _sentences(toks: list[Token]) -> list[tuple[list[int], bool]]:
    """Token indices of each sentence (marks dropped), and whether it is a question."""
    found, current = [], []
    for i, t in enumerate(toks):
        if t.kind == "stop" and t.text in ".!?":
            if current:
                found.append((current, t.text == "?"))
            current = []
        elif not (t.kind == "stop" and t.text == '"'):
            current.append(i)
    if current:
        found.append((current, False))
    return found


def _clauses(toks: list[Token], sentence: list[int]) -> list[list[int]]:
    """Split a sentence before each connective and at ``;`` and ``:`` (the marks dropped); a
    clause cut by a colon is followed by the empty list (a label: "Memory: 16 bytes")."""
    clauses, current = [], []
    for n, i in enumerate(sentence):
        if (toks[i].kind == "stop" and toks[i].text == "," and current
                and toks[current[0]].text in lx.CONDITIONS):  # "if A, B": the condition ends
            clauses.append(current)
            current = []
            continue
        t = toks[i]
        word = t.text if t.kind == "word" else None
        before = toks[sentence[n - 1]] if n else None
        after = toks[sentence[n + 1]] if n + 1 < len(sentence) else None
        split = False
        if t.kind == "stop" and t.text in ";:":
            if current:
                clauses.append(current)
                if t.text == ":":
                    clauses.append([])
            current = []
            continue
        if word in _SPLIT and not (word == "since" and after is not None and after.kind == "num"):
            split = not (word == "so" and before is not None and before.text in ("do", "not", "and"))
        elif word in lx.CONDITIONS and word != "whether" and not (before is not None and before.text == "as"):
            if word in ("where", "when", "wherever"):  # after a noun, a relative: "the input where it won"
                split = before is None or before.kind == "stop"
            else:
                split = word != "once" or (after is not None and after.text in lx.SUBJECT_PRONOUNS | lx.DETERMINERS)
        elif word in ("and", "or") and before is not None and before.text == "," and after is not None \
                and after.text in lx.SUBJECT_PRONOUNS | lx.DETERMINERS:
            split = True
        elif ends.main_clause_starts(toks, current, word, before, after) or ends.spliced(word, before, after):
            split = True
        if split and current:
            clauses.append(current)
            current = []
        current.append(i)
    if current:
        clauses.append(current)
    return clauses


def _segments(toks: list[Token], clause: list[int]) -> list[list[int]]:
    """A clause cut at its commas."""
    segments, current = [], []
    for i in clause:
        if toks[i].kind == "stop" and toks[i].text == ",":
            if current:
                segments.append(current)
            current = []
        else:
            current.append(i)
    if current:
        segments.append(current)
    return segments


def _verbal(prev: str | None, word: str, nxt: Token | None, prev2: str | None = None,
            long: bool = False, long3: bool = False, spoken: bool = False, first: bool = True,
            setting: bool = False) -> bool:
    """Whether ``word``, between ``prev`` and ``nxt`` in a stretch of a clause, is a verb."""
    if not lx.can_be_verb(word):
        return False
    if prev in lx.SUBJECT_PRONOUNS or prev in lx.AUXILIARIES or prev in lx.ADVERBS:
        return True
    if prev == "to":
        return word not in lx.NUMBER_WORDS  # "to keep", but "sum to zero"
    if prev == "-to-":
        return False  # "update-to-weight": a compound, not an infinitive
    if setting and word in lx.IMPERATIVES and nxt is not None and nxt.kind in ("word", "num", "open"):
        return True  # "For stability use z - max(z)": a setting, then an instruction
    object_next = nxt is not None and (nxt.kind in ("num", "open") or nxt.text in lx.DETERMINERS
                                       or nxt.text in lx.PRONOUNS or nxt.text in lx.PREPOSITIONS)
    something_next = nxt is not None and nxt.kind in ("word", "num", "open")
    if lx.participle(word):
        return prev is not None and prev not in lx.DETERMINERS and prev not in lx.PREPOSITIONS and (
            nxt is None or nxt.kind != "word" or nxt.text in lx.PREPOSITIONS or nxt.text in lx.ADVERBS)
    if word.endswith("ing"):
        return False  # a gerund names an action; it does not assert one
    if lx.only_verb(word):
        return prev is not None or something_next
    if prev is None:  # an imperative: "skip the step", "clip it"; "sum over positions" is a noun
        if word in lx.IMPERATIVES and something_next and long3 and word not in ("sum", "mask", "shard", "skip", "checkpoint", "weight", "scale", "clip"):
            return True
        return nxt is not None and (nxt.text in lx.DETERMINERS or nxt.text in lx.PRONOUNS
                                    or long and nxt.text in lx.PREPOSITIONS
                                    or word in lx.IMPERATIVES and long and nxt.kind == "word")
    subject = prev not in lx.DETERMINERS and prev not in lx.PREPOSITIONS and (
        word.endswith("s") or prev.endswith("s") or len(prev) == 1 or not prev.isalpha() or spoken)
    ends = first and nxt is None and word.endswith("s") and not prev.endswith("s") and (
        prev2 not in lx.PREPOSITIONS)  # "exp overflows.", not "over time steps" or "..., master copies"
    if word.endswith("s") and prev2 in lx.DETERMINERS and prev not in lx.DETERMINERS and nxt is not None \
            and nxt.kind in ("word", "num"):
        return True  # "the step updates p32"
    return subject and (object_next or ends)


def _has_predicate(toks: list[Token], segment: list[int], text: str = "", first: bool = True) -> bool:
    prev2 = None
    spoken = False  # an article earlier on: a sentence, not a list ("the columns of dx sum to 0")
    if toks[segment[0]].text in ("no", "never", "nothing", "none") and len(segment) > 2:
        return True  # "No decay for biases and norm weights": a denial is a statement
    prev = None
    for n, i in enumerate(segment):
        t = toks[i]
        if t.kind == "op" and t.text in RELATIONS and n > 0 and n + 1 < len(segment):
            return True  # a relation between two things: "s < k", "dw += g"
        if t.kind == "word":
            if t.text in lx.AUXILIARIES and prev not in lx.DETERMINERS:
                return True
            nxt = toks[segment[n + 1]] if n + 1 < len(segment) else None
            if t.text not in lx.NEGATORS and _verbal(prev, t.text, nxt, prev2, len(segment) >= 5, len(segment) >= 3, spoken, first,
                                                    toks[segment[0]].text in _SETTINGS and n > 1):
                return True
            spoken = spoken or t.text in ("the", "a", "an")
            compound = t.text == "to" and 0 < t.start and text[t.start - 1:t.start] == "-"
            prev2, prev = prev, "-to-" if compound else t.text
        elif t.kind == "num":
            if prev not in (None, "#") and prev not in lx.FUNCTION_WORDS:
                return True  # a quantity: "bf16 weights 2 bytes", "ratio 1e-3"
            prev2, prev = prev, "#"
        else:
            prev2, prev = prev, "#"  # an operator or a bracket: "h ^ 2" is not "h 2"
    return False


def _listlike(toks: list[Token], clause: list[int]) -> bool:
    segments = _segments(toks, clause)
    return len(segments) >= 2 and all(_bare(toks, s) for s in segments)


def _bare(toks: list[Token], segment: list[int]) -> bool:
    """A list item: a few words, no article, no pronoun ("decoupled decay", "eps outside")."""
    words = [toks[i].text for i in segment if toks[i].kind in ("word", "num")]
    return len(words) <= 4 and not any(w in ("the", "a", "an") or w in lx.SUBJECT_PRONOUNS for w in words)


def _asked(toks: list[Token], sentence: list[int], clause: list[int]) -> bool:
    """An embedded or direct question: "why ...", "whether ...", "(explain) what ..."."""
    first = toks[clause[0]].text
    if first in ("why", "whether"):
        return True
    if first in ("how", "what", "which", "where", "when"):
        start = sentence.index(clause[0])
        asking = start > 0 and toks[sentence[start - 1]].text in _ASKING
        cleft = any(toks[i].text in ("is", "are", "was") for i in clause[2:])
        return (asking or start == 0 and first != "which" and first not in lx.CONDITIONS) and not cleft
    return False


def _negations(toks: list[Token], clause: list[int]) -> list[int]:
    """For each token of ``clause``: the index of the negator before it, in its stretch, that
    denies it, or -1."""
    words = [toks[i].text for i in clause]
    flags, active = [], -1
    denied = next((i for i, w in zip(clause, words) if w in _DENYING), -1)
    for n, w in enumerate(words):  # "n_k / N is not needed", "per-layer norms add nothing"
        if w in lx.NEGATORS and w != "without" and n > 0 and (
                words[n - 1] in lx.AUXILIARIES and (w in ("nothing", "no") and words[n - 1] in _COPULAS or n > 1 and any(
                    x in lx.NEED_WORDS for x in words[n + 1:n + 3]))
                or w == "nothing" and words[n - 1] in _EMPTY_VERBS):
            denied = clause[n]
            break
    closes = ends.subject_clause_ends(toks, clause)
    for n, i in enumerate(clause):
        t = toks[i]
        if t.kind == "stop" and t.text == "," or n in closes:
            active = -1
        if active >= 0 and toks[active].text == "without" and (t.text in lx.SUBJECT_PRONOUNS or t.text in lx.AUXILIARIES):
            active = -1  # "without an overflow it doubles": "without" denies a phrase, not the clause
        flags.append(active if active >= 0 else denied)
        pair = tuple(words[n:n + 2])
        if pair in _NOT_NEGATIONS and not (pair[0] == "not" and "also" not in words[n:] and "but" not in words[n:]):
            continue
        if t.text in lx.NEGATORS or any(tuple(words[n:n + len(p)]) == p for p in lx.NEGATING_PHRASES):
            active = i
    return flags


def read(text: str) -> Reading:
    """Read ``text``: every token with its sentence, role, polarity and lemmas."""
    toks = tokens(text)
    n = len(toks)
    reading = Reading(str(text), toks, [-1] * n, [FRAGMENT] * n, [False] * n, [-1] * n,
                      [lx.lemmas(t.text) if t.kind == "word" else frozenset({t.text}) for t in toks])
    for s, (sentence, question) in enumerate(_sentences(toks)):
        previous_claim = False
        clause_roles, labels, after_colon = [], set(), set()
        for clause in _clauses(toks, sentence):
            if not clause:
                labels.add(len(clause_roles) - 1)
                after_colon.add(len(clause_roles))
                continue
            segments = _segments(toks, clause)
            with_predicate = [_has_predicate(toks, seg, reading.text, n == 0) for n, seg in enumerate(segments)]
            first = toks[clause[0]].text
            if question or _asked(toks, sentence, clause):
                role = ASKED
            elif first in lx.CONDITIONS:
                role = CONDITION
            elif any(with_predicate) or (first in _ELLIPTIC and previous_claim):
                role = CLAIM
            else:
                role = FRAGMENT
            elaborates = len(clause_roles) in after_colon and previous_claim  # "per parameter: 2 for ..."
            if elaborates and role == FRAGMENT:
                role = CLAIM
            bare = [not has and _bare(toks, seg) for seg, has in zip(segments, with_predicate)]
            listed = len(segments) >= 3 and 2 * sum(bare) >= len(segments) and not elaborates
            for seg, has in zip(segments, with_predicate):
                for i in seg:
                    reading.role[i] = LISTED if role == CLAIM and listed and not has else role
            for i, by in zip(clause, _negations(toks, clause)):
                reading.negated[i], reading.negated_by[i] = by >= 0, by
                reading.sentence[i] = s
            clause_roles.append((clause, role))
            previous_claim = role == CLAIM
        clause_roles = _read_elliptic_consequences(reading, toks, clause_roles)
        _read_settings(reading, toks, clause_roles, labels)
        if any(role == CLAIM for _, role in clause_roles):
            for clause, role in clause_roles:
                if role == FRAGMENT:
                    for i in clause:
                        if reading.role[i] == FRAGMENT:
                            reading.role[i] = CONTEXT
        _read_counterfactuals(reading, clause_roles)
    return reading


def _read_elliptic_consequences(reading: Reading, toks: list[Token], clause_roles) -> list:
    """"If the loss is too smooth, probably the same batch every time": a stated condition whose
    consequence is said without its verb; the consequence is its claim (not a list of words)."""
    out = list(clause_roles)
    for n in range(1, len(out)):
        (condition, role), (clause, following) = out[n - 1], out[n]
        if role == CONDITION and following == FRAGMENT and len(clause) >= 2 and not _listlike(toks, clause) \
                and any(_has_predicate(toks, seg, reading.text) for seg in _segments(toks, condition[1:])):
            for i in clause:
                reading.role[i] = CLAIM
            out[n] = (clause, CLAIM)
    return out


_SETTINGS = frozenset({"on", "after", "for", "with", "in", "at", "during", "without", "given", "upon",
                       "before", "at", "per"})


def _read_settings(reading: Reading, toks: list[Token], clause_roles, labels: set) -> None:
    """"On overflow: skip the step": a phrase that sets the scene for the claim after it is
    its condition; "ReLU mask: one bit per element", a short label before a colon, its subject."""
    for n, ((clause, role), (next_clause, following)) in enumerate(zip(clause_roles, clause_roles[1:])):
        if role == FRAGMENT and following == FRAGMENT and n in labels and toks[clause[0]].text in _SETTINGS:
            for i in clause:
                reading.role[i] = CONDITION  # "For a category: Gumbel-softmax with a temperature."
            for i in next_clause:
                reading.role[i] = CLAIM
            continue
        if role != FRAGMENT or following != CLAIM:
            continue
        if toks[clause[0]].text in _SETTINGS:
            for i in clause:
                reading.role[i] = CONDITION
        elif n in labels and len(clause) <= 4:
            for i in clause:
                reading.role[i] = CLAIM
    for n, ((clause, role), (next_clause, following)) in enumerate(zip(clause_roles, clause_roles[1:])):
        if n in labels and role == FRAGMENT and following == FRAGMENT and len(clause) <= 4 and len(next_clause) >= 3 \
                and not _listlike(toks, next_clause):  # "Exploding gradients: clip by global norm."
            for i in clause + next_clause:
                reading.role[i] = CLAIM


def _read_counterfactuals(reading: Reading, clause_roles) -> None:
    """"If you don't subtract the max, exp overflows": the condition's negation is the advice."""
    bad = any(reading.lemmas[i] & _BAD for clause, role in clause_roles if role == CLAIM for i in clause)
    if not bad:
        return
    for clause, role in clause_roles:
        if role == CONDITION:
            for i in clause:
                reading.negated[i], reading.negated_by[i] = False, -1
