"""Which words of an answer it claims: sentences, clauses, negation, questions and lists.

A key point counts only where the answer asserts it, so each token gets a role and a
polarity:

- **claim**: in a clause that states something, i.e. has a predicate: a verb in a verbal
  place (``the scatter accumulates``, ``we sum``, ``skip the step on overflow``, ``decay
  decoupled from the gradient``), a copula or modal (``is``, ``must``), or a relation (``=``,
  ``+=``, ``->``); an instruction that only names an action ("Decouple the weight decay.")
  is none (grader/learner/imperatives.py);
- **condition**: in an ``if``/``when``/``where``/``unless`` clause (it counts with the claim it
  conditions: "where windows overlap, the gradients add up"; a consequence said without its verb,
  "if the loss is too smooth, probably the same batch", is still the claim);
- **asked**: in a question, or an embedded one ("why is decay decoupled", "you ask what dx is");
- **context**: a clause without a predicate in a sentence that has a claim ("One extra QKᵀ,
  yet faster"): like a condition, it counts with the claim;
- **fragment**: a sentence without a predicate ("Bias correction, 1 - beta. Decoupled."), and
  a lead-in that introduces a list ("The key concepts are ...", grader/learner/lists.py);
- **listed**: the items of a list of words ("It needs bias correction, decoupled decay, eps
  outside, a master copy"; "The key ideas are the bias correction, a decoupled decay, ...";
  slashes, bullets, numbers, "and the ..." chains): only an item with its own predicate is
  claimed. A claim lends context only within its stretch between semicolons ("a; b; c").

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

from dataclasses import dataclass, field

from backprop_traps.grader.learner import clause_ends as ends
from backprop_traps.grader.learner import imperatives
from backprop_traps.grader.learner import lexicon as lx
from backprop_traps.grader.learner import lists, polarity
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
_PREFIXES = frozenset({"re", "pre", "un", "de", "co", "over", "under", "sub", "mis", "out", "up", "back", "down",
                       "cross", "double", "self", "fine", "hand", "hard", "soft", "auto"})
"""A hyphenated compound ("log-softmax", "scatter-add") is a name, not a verb, except after these
("re-run", "de-bias", "hand-write")."""


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
    predicates: list[int] = field(default_factory=list)
    """The token that makes each clause a statement (a verb, a copula, a relation), in order."""
    framed: set = field(default_factory=set)
    """Tokens a denying frame denies ("It is not true that ..."): denied, their own negations too."""
    clause: list[int] = field(default_factory=list)
    """For each token, the number of its clause in the answer (-1 for a mark between clauses)."""

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
        if word == "whether" and ends.regardless(toks, sentence, n):
            split = True  # "whether z > 0 or not": a condition left open is no condition
        elif word in _SPLIT and not (word == "since" and after is not None and after.kind == "num"):
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
    """A clause cut at its commas, and at each "and"/"or" of a chain of three or more before a
    determiner ("the X and the Y and the Z and the W": a list without commas)."""
    chained = [i for n, i in enumerate(clause[:-1]) if toks[i].text in ("and", "or")
               and toks[clause[n + 1]].text in lx.DETERMINERS | {"+="} | lx.CARDINALS
               or toks[i].text in ("and", "or") and toks[clause[n + 1]].kind == "num"]
    ands = [n for n, i in enumerate(clause) if toks[i].text in ("and", "or")]
    if len(ands) >= 2 and all(b - a <= 6 for a, b in zip([-1] + ands, ands + [len(clause)])):
        cuts = {clause[n] for n in ands}  # "overlap and sum and atomic": short items, a chain
    else:
        cuts = set(chained) if len(chained) >= 3 else set()
    segments, current = [], []
    for i in clause:
        if toks[i].kind == "stop" and toks[i].text == "," or i in cuts:
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
    if prev in ("each", "all", "both") and (prev2 is None or prev2 in lx.PREPOSITIONS):
        return False  # "the gain of each layer", not "they each layer"
    if prev2 in lx.DETERMINERS and lx.participle(prev) and prev not in lx.AUXILIARIES:
        return False  # "a skipped step", "the saved activations": a noun phrase
    if prev in lx.SUBJECT_PRONOUNS or prev in lx.AUXILIARIES or prev in lx.ADVERBS:
        return True
    if prev == "to":
        return word not in lx.NUMBER_WORDS  # "to keep", but "sum to zero"
    if prev == "-to-":
        return False  # "update-to-weight": a compound, not an infinitive
    if setting and word in lx.IMPERATIVES and nxt is not None and nxt.kind in ("word", "num", "open"):
        return True  # "For stability use z - max(z)": a setting, then an instruction
    object_next = nxt is not None and (nxt.kind in ("num", "open") or nxt.text in lx.DETERMINERS or nxt.text in lx.CARDINALS
                                       or nxt.text in lx.PRONOUNS or nxt.text in lx.PREPOSITIONS)
    something_next = nxt is not None and nxt.kind in ("word", "num", "open")
    if lx.participle(word) and not (prev is None and (word in lx.IMPERATIVES or word in lx._forms(word).get("VERB", ()))):
        # "put eps outside", "spread dout evenly": a base form opens an instruction
        return prev is not None and prev not in lx.DETERMINERS and prev not in lx.PREPOSITIONS and (
            nxt is None or nxt.kind != "word" or nxt.text in lx.PREPOSITIONS or nxt.text in lx.ADVERBS)
    if word.endswith("ing"):
        return False  # a gerund names an action; it does not assert one
    if lx.only_verb(word):
        return prev not in ("the", "a", "an") and (prev is not None or something_next)
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


def _predicate(toks: list[Token], segment: list[int], text: str = "", first: bool = True,
               weak=lambda at: False) -> int | None:
    """The token that makes ``segment`` a statement (a verb, a copula, a relation), or None.
    A verb for which ``weak`` is true (an instruction that only names an action) does not."""
    prev2 = None
    spoken = False  # an article earlier on: a sentence, not a list ("the columns of dx sum to 0")
    if toks[segment[0]].text in ("no", "never", "nothing", "none") and len(segment) > 2:
        return segment[0]  # "No decay for biases and norm weights": a denial is a statement
    prev = None
    for n, i in enumerate(segment):
        t = toks[i]
        if t.kind == "op" and t.text in RELATIONS and n > 0 and n + 1 < len(segment):
            return i  # a relation between two things: "s < k", "dw += g"
        if t.kind == "word":
            if t.text in lx.AUXILIARIES and prev not in lx.DETERMINERS:
                return i
            nxt = toks[segment[n + 1]] if n + 1 < len(segment) else None
            compounded = text[t.end:t.end + 1] == "-" and text[t.end + 1:t.end + 2].isalpha() or (
                t.start > 1 and text[t.start - 1] == "-" and text[t.start - 2].isalpha() and prev not in _PREFIXES)
            coordinated = prev in ("and", "or")  # "overlap and sum": a verb after "and" needs its own signs
            if coordinated and (nxt is None or nxt.text in ("and", "or")):
                prev2, prev = prev, t.text
                continue
            if t.text not in lx.NEGATORS and not compounded and _verbal(
                    None if coordinated else prev, t.text, nxt, prev2, len(segment) >= 5, len(segment) >= 3, spoken, first,
                                                    toks[segment[0]].text in lx.SETTINGS and n > 1):
                if not weak(i):
                    return i
                if t.text in lx.IMPERATIVES or lx.only_verb(t.text) or lx.lemmas(t.text) & lx.KIT_VERBS:
                    return None  # "Recompute P tiles.": the rest is its object, not a clause
            spoken = spoken or t.text in ("the", "a", "an")
            compound = t.text == "to" and 0 < t.start and text[t.start - 1:t.start] == "-"
            prev2, prev = prev, "-to-" if compound else t.text
        elif t.kind == "num":
            chain = any(toks[j].text in ("and", "or") for j in segment[:n])  # "ratio and around 1e-3": items
            if prev not in (None, "#") and prev not in lx.FUNCTION_WORDS and not chain:
                return i  # a quantity: "bf16 weights 2 bytes", "ratio 1e-3"
            prev2, prev = prev, "#"
        else:
            prev2, prev = prev, "#"  # an operator or a bracket: "h ^ 2" is not "h 2"
    return None


def _listlike(toks: list[Token], clause: list[int]) -> bool:
    segments = _segments(toks, clause)
    return len(segments) >= 2 and all(lists.item(toks, s, nominal=False) for s in segments)


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


def read(text: str) -> Reading:
    """Read ``text``: every token with its sentence, role, polarity and lemmas."""
    toks = tokens(text)
    n = len(toks)
    reading = Reading(str(text), toks, [-1] * n, [FRAGMENT] * n, [False] * n, [-1] * n,
                      [lx.lemmas(t.text) if t.kind == "word" else frozenset({t.text}) for t in toks])
    reading.clause = [-1] * n
    clause_count = 0
    for s, (sentence, question) in enumerate(_sentences(toks)):
        for i in sentence:
            reading.sentence[i] = s
        introduced, naming = lists.lead_in(toks, sentence)  # "The key concepts are ...": named, not claimed
        concluded = lists.lead_out(toks, sentence)  # "... are the key points."
        sentence = sentence[introduced:len(sentence) - concluded]
        naming = naming or concluded > 0
        previous_claim = previous_light = False
        clause_roles, labels, after_colon, groups = [], set(), set(), []
        split = _clauses(toks, sentence)
        related = imperatives.related(toks, [c for c in split if c])
        for clause in split:
            if not clause:
                labels.add(len(clause_roles) - 1)
                after_colon.add(len(clause_roles))
                continue
            for i in clause:
                reading.clause[i] = clause_count
            clause_count += 1
            segments = _segments(toks, clause)
            predicates = [_predicate(toks, seg, reading.text, n == 0, lambda at, n=n: not related and imperatives.weak(
                toks, segments, n, at)) for n, seg in enumerate(segments)]  # "Decouple the weight decay." names
            if naming:  # after a lead-in: only what cannot be a noun phrase claims, and no embedded question
                predicates = [at if at is not None and (lists.asserts(toks, seg) or imperatives.imperative(
                    toks, seg, at) and not lists.bare(toks, seg, at)) and not lists.embedded_question(toks, seg) else None
                    for seg, at in zip(segments, predicates)]
            reading.predicates += [at for at in predicates if at is not None]
            with_predicate = [at is not None for at in predicates]
            first = toks[clause[0]].text
            if question or _asked(toks, sentence, clause):
                role = ASKED
            elif first in lx.CONDITIONS:
                role = CONDITION
            elif any(with_predicate) or (first in _ELLIPTIC and previous_claim and not naming):
                role = CLAIM
            else:
                role = FRAGMENT
            elaborates = len(clause_roles) in after_colon and previous_claim and not previous_light  # "per parameter: 2 for ..."
            if elaborates and role == FRAGMENT:
                role = CLAIM
            listed = lists.listed(toks, segments, predicates, elaborates) if role == CLAIM \
                else [False] * len(segments)
            for seg, item in zip(segments, listed):
                for i in seg:
                    reading.role[i] = LISTED if item else role
            for i, by in zip(clause, polarity.negations(toks, clause)):
                reading.negated[i], reading.negated_by[i] = by >= 0, by
            clause_roles.append((clause, role))
            groups.append(sum(1 for i in sentence if i < clause[0] and toks[i].text == ";"))
            previous_claim = role == CLAIM
            # "We have the embedding backward: scatter-add, the sum, ...": a light verb hangs the list after
            # its colon on nothing, so the list is not its elaboration
            previous_light = previous_claim and all(lists.light(toks, seg, at) for seg, at in zip(segments, predicates)
                                                    if at is not None)
        clause_roles = _read_elliptic_consequences(reading, toks, clause_roles)
        _read_settings(reading, toks, clause_roles, labels)
        claimed = {g for g, (_, role) in zip(groups, clause_roles) if role == CLAIM}
        for g, (clause, role) in zip(groups, clause_roles):  # "One extra QKᵀ, yet faster"; not "a; b; c"
            if role == FRAGMENT and g in claimed:
                for i in clause:
                    if reading.role[i] == FRAGMENT:
                        reading.role[i] = CONTEXT
        _read_counterfactuals(reading, clause_roles)
        polarity.deny_framed(reading, [i for i in range(n) if reading.sentence[i] == s and toks[i].kind != "stop"])
    return reading


def _read_elliptic_consequences(reading: Reading, toks: list[Token], clause_roles) -> list:
    """"If the loss is too smooth, probably the same batch every time": a stated condition whose
    consequence is said without its verb; the consequence is its claim (not a list of words)."""
    out = list(clause_roles)
    for n in range(1, len(out)):
        (condition, role), (clause, following) = out[n - 1], out[n]
        if role == CONDITION and following == FRAGMENT and len(clause) >= 2 and not _listlike(toks, clause) \
                and any(_predicate(toks, seg, reading.text) is not None for seg in _segments(toks, condition[1:])):
            for i in clause:
                reading.role[i] = CLAIM
            out[n] = (clause, CLAIM)
    return out


def _read_settings(reading: Reading, toks: list[Token], clause_roles, labels: set) -> None:
    """"On overflow: skip the step": a phrase that sets the scene for the claim after it is
    its condition; "ReLU mask: one bit per element", a short label before a colon, its subject."""
    for n, ((clause, role), (next_clause, following)) in enumerate(zip(clause_roles, clause_roles[1:])):
        if role == FRAGMENT and following == FRAGMENT and n in labels and toks[clause[0]].text in lx.SETTINGS:
            for i in clause:
                reading.role[i] = CONDITION  # "For a category: Gumbel-softmax with a temperature."
            for i in next_clause:
                reading.role[i] = CLAIM
            continue
        if role != FRAGMENT or following != CLAIM:
            continue
        if toks[clause[0]].text in lx.SETTINGS:
            for i in clause:
                reading.role[i] = CONDITION
        elif n in labels and len(clause) <= 4:
            for i in clause:
                reading.role[i] = CLAIM
    for n, ((clause, role), (next_clause, following)) in enumerate(zip(clause_roles, clause_roles[1:])):
        if n in labels and role == FRAGMENT and following == FRAGMENT and len(clause) <= 4 and (
                len(next_clause) >= 3 or toks[next_clause[0]].kind == "num") \
                and not _listlike(toks, next_clause):  # "Exploding gradients: clip by global norm."; "grads: 2"
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
