"""Answers that name things without saying anything about them: lead-ins and lists.

A keyword list asserts nothing, however it is dressed:

- **a lead-in** ("The key concepts are ...", "Key points: ...", "It's all about ...", "I'd
  mention ...") introduces what follows without claiming it: its words are a fragment, and what
  follows it must make its own claim ("The key point is *that eps goes outside the root*");
- **a list of items**: three or more comma-separated stretches, at least half of them items
  without a predicate of their own. An item is short and has no subject pronoun: bare words
  ("decoupled decay", "eps outside"), or, where the list hangs on no real verb (a copula, "has",
  "needs", "includes", "uses"), a noun phrase with its articles ("a decoupled weight decay",
  "the epsilon outside of the square root"), and so where it hangs on nothing or on a noun
  phrase ("the key tiles, the online softmax, ..."). After a verb of substance ("I'd track, for
  every layer, the norm of the gradient, the norm of the update, and their ratio") the noun
  phrases are what the verb acts on, and stay claimed. In a list, a word that may be a noun or a
  verb is a noun ("the overlapping windows *with* a sum") but for a clear sign of a verb
  (``asserts``, an object after it: "an overflow skips *that* step").

Standard library only, plus the word lexicon.
"""
from __future__ import annotations

import re

from backprop_traps.grader.learner import lexicon as lx
from backprop_traps.grader.learner.imperatives import imperative

_FILLERS = (r"so|okay|ok|well|um|uh|erm|er|hmm|basically|yeah|yes|right|alright|and|now|overall|essentially|"
            r"honestly|anyway|in short|in summary|in brief|to summarise|to summarize|to sum up|tl dr|"
            r"i think|i guess|i believe|i would say|i mean|,|-")
_QUALIFIERS = (r"the|my|our|some|these|those|a|few|all|two|three|four|five|six|seven|eight|several|main|key|"
               r"most|more|very|important|relevant|core|crucial|central|essential|basic|big|biggest|major|"
               r"fundamental|critical|following|other|top|primary|notable|quick|things|technical")
_META = (r"(?:key|main|important|crucial|essential|core|critical|big) (?:steps?|parts?|bits?)|concepts?|points?|ideas?|things?|terms?|keywords?|key words?|words?|topics?|elements?|"
         r"ingredients?|pieces?|aspects?|notions?|components?|takeaways?|facts?|highlights?|essentials?|"
         r"buzzwords?|themes?|considerations?|summary|bullet points?|bullets?|items?|list|phrases?")
_AFTER = (r"here|involved|to (?:mention|remember|know|cover|note|consider|keep in mind|say|hit)|"
          r"that (?:matter|matters|come to mind)|i would (?:mention|list|name|say)|i (?:have|see|know)|"
          r"for this|in (?:this|my) answer|for (?:this|the) question|of (?:this|the|my) (?:answer|question)")
_LINK = r"are|is|would be|will be|include|includes|involve|involves|cover|covers|:|-|=|->"
_ABOUT = (r"about|all about|really about|mostly about|basically about|comes down to|come down to|"
          r"boils down to|boil down to|involves|includes|covers|touches on|relates to|related to|"
          r"revolves around|concerns|centres on|centers on")
_LEAD_IN = re.compile(
    rf"^(?:(?:{_FILLERS}) )*(?:"
    rf"(?:(?:{_QUALIFIERS}) )*(?:{_META})(?: (?:{_AFTER}))*(?: (?:{_LINK}))+"
    rf"|(?:it|this|that|the answer|my answer|the solution|everything|it all)(?: is)? (?:{_ABOUT})"
    rf"|(?:i would|i will|i|let me|we|you|you should|you need to|one should|we should)"
    rf"(?: would| will| should| must| need to| want to| just| also)* "
    rf"(?:mention|list|name|bring up|talk about|cover|touch on|discuss|note|think about|think of|say)"
    rf"|(?:think about|think of|remember|recall|mention|keep in mind|key words?|keywords?)"
    rf"|(?:let|let us|we can|we could|we should|i want to|i would like to|time to)"
    rf" (?:talk about|discuss|cover|look at|go over|go through|consider|touch on|think about|start with)"
    rf"|(?:there is|there are|we have|you have)(?: also)? (?:the|a) (?:question|issue|matter|topic|problem|subject|story)"
    rf"s? of|what about|how about|regarding|as for|topics?|tags?"
    rf")(?: that)?(?: :)?(?= |$)")
_LEAD_OUT = re.compile(
    rf"(?:^| )(?:(?:are|is|would be|will be|were)(?: all| really)? (?:(?:{_QUALIFIERS}) )*(?:{_META})(?: (?:{_AFTER}))*"
    rf"|(?:are|is) what (?:matters|counts|i would mention))$")
_APPROXIMATE = frozenset({"a", "one", "half", "twice", "two", "three", "ten", "roughly", "around"})
"""After "it is about": an amount ("it is about a third more time"), not a topic."""

_MODAL = frozenset({"have", "has", "had", "need", "needs", "got", "ought", "going"})
LIGHT_VERBS = frozenset({"be", "have", "need", "require", "include", "involve", "use", "cover", "mention",
                         "contain", "consist", "comprise", "feature", "concern", "list", "name", "say",
                         "think", "mean", "remember", "recall"})
"""Verbs that hang a list on nothing: "AdamW has a bias correction, a decoupled decay, ...";
"it needs ...", "it uses ...". Their lemmas."""


def lead_in(toks, sentence: list[int]) -> tuple[int, bool]:
    """How many tokens at the start of ``sentence`` introduce it without claiming anything, and
    whether what follows them only names things (not "... is *that* eps goes outside", "... is
    *to* recompute P")."""
    words = [toks[i].text for i in sentence]
    m = _LEAD_IN.match(" ".join(words))
    if not m or not m.group().strip(" ,-"):
        return 0, False
    n = len(m.group().split())
    if n >= len(words):
        return 0, False  # "That is the key point." says nothing, but introduces nothing either
    if words[n - 1] == "about" and (words[n] in _APPROXIMATE or toks[sentence[n]].kind == "num") \
            and "talk" not in words[:n]:  # "it is about 16 bytes" is an amount; "let's talk about 16, ..." no
        return 0, False
    return n, words[n - 1] != "that" and words[n] not in (",", "that", "to", "how", "why", "what", "when", "where")


def lead_out(toks, sentence: list[int]) -> int:
    """How many tokens at the end of ``sentence`` say that what came before them is a list of
    names ("Bias correction, decoupled decay and eps outside are the key points.")."""
    words = [toks[i].text for i in sentence]
    m = _LEAD_OUT.search(" ".join(words))
    n = len(m.group().split()) if m else 0
    return n if 0 < n < len(words) else 0


def light(toks, segment: list[int], at: int) -> bool:
    """Whether the predicate at token ``at`` of ``segment`` is a light verb: the verbs from it
    on (auxiliaries, adverbs, "have to") end in one of ``LIGHT_VERBS``, or in none; a copula only
    after a pronoun ("it's the bias correction, a decoupled decay, ...")."""
    main = None
    for i in segment[segment.index(at):]:
        w = toks[i].text
        if w == "to" and main in _MODAL:
            continue  # "you have to divide"
        if toks[i].kind != "word" or not (w in lx.AUXILIARIES or w in lx.ADVERBS or lx.can_be_verb(w)):
            break
        if w not in lx.ADVERBS:
            main = w
        if w not in lx.AUXILIARIES and w not in lx.ADVERBS and w not in _MODAL:
            break
    if main is not None and "be" in lx.lemmas(main) and any(
            toks[i].kind == "word" and toks[i].text not in lx.PRONOUNS | lx.DETERMINERS | lx.ADVERBS
            for i in segment[:segment.index(at)]):
        return False  # "the price is one extra forward, a third more time, ...": said of the price
    return main is None or bool(lx.lemmas(main) & LIGHT_VERBS) or main in lx.AUXILIARIES and main not in (
        "gets", "get", "got", "becomes", "become", "became", "stays", "stay", "remains", "goes", "went",
        "comes", "came", "makes", "made", "takes", "took", "gives", "gave", "equals", "says", "said")


def item(toks, segment: list[int], nominal: bool) -> bool:
    """A list item: a few words, no subject pronoun ("decoupled decay", "eps outside"); with
    ``nominal``, a noun phrase with its articles too ("the epsilon outside of the square root")."""
    words = [toks[i].text for i in segment if toks[i].kind in ("word", "num")]
    if any(w in lx.SUBJECT_PRONOUNS and w not in ("that", "this") for w in words):
        return False
    if not any(w in ("the", "a", "an") or w in lx.SUBJECT_PRONOUNS for w in words):
        return len(words) <= 4
    return nominal and len(words) <= 8


_PERSONAL = frozenset({"i", "you", "we", "they", "it", "he", "she", "there"})
_RELATIONS = frozenset({"=", "+=", "-=", "*=", "/=", ":=", "->", "<-", "~", "<=", ">=", "<", ">", "!=", "==", "⊥"})


def asserts(toks, segment: list[int]) -> bool:
    """Whether a list item says something of its own, by signs that cannot be a noun's: a
    relation between two terms, an auxiliary, a verb after a personal pronoun, a form that is
    only a verb, a denial ("no decay for biases"). A word that may be a noun or a verb ("the
    overlapping windows *with* a sum", "the update-to-weight ratio *around* 1e-3") is a noun."""
    words = [toks[i].text for i in segment]
    if words[0] in ("no", "never", "nothing", "none") and len(words) > 2:
        return True
    for n, i in enumerate(segment):
        t, prev = toks[i], words[n - 1] if n else None
        if t.kind == "op" and t.text in _RELATIONS and 0 < n < len(segment) - 1:
            return True
        if t.kind == "word" and t.text in lx.AUXILIARIES and prev not in ("the", "a", "an"):
            return True  # "that is the bias correction"
        if t.kind != "word" or prev in lx.DETERMINERS or prev in lx.PREPOSITIONS:
            continue
        if prev in _PERSONAL and lx.can_be_verb(t.text):
            return True
        if prev is not None and lx.only_verb(t.text) and not lx.participle(t.text):
            return True
    return False


def listed(toks, segments: list[list[int]], predicates: list[int | None], elaborates: bool) -> list[bool]:
    """For each segment of a clause: whether it is an item of a list (see the module's text),
    named and not claimed; all False when the clause is no list. ``predicates`` holds each
    segment's predicate token, None without one."""
    if len(segments) < 3 or elaborates:
        return [False] * len(segments)
    head, at = segments[0], predicates[0]  # a list hangs on no verb of substance: none, a light one, or
    nominal = at is None or light(toks, head, at) or toks[head[0]].text in ("the", "a", "an") and not (
        asserts(toks, head) or _acts(toks, head, at))  # a noun's ("the key tiles, the online softmax, ...")
    if nominal:  # its items are noun phrases ("the overlapping windows with a sum") but for a
        # clear sign of a verb: "an overflow skips that step", a verb and its object
        predicates = [at if at is not None and (asserts(toks, seg) or imperative(toks, seg, at) or _acts(
            toks, seg, at)) else None for seg, at in zip(segments, predicates)]
    tails = sum(1 for seg, at in zip(segments, predicates) if at is None and _contrast(toks, seg))
    items = [at is None and not _contrast(toks, seg) and item(toks, seg, nominal)
             for seg, at in zip(segments, predicates)]
    if len(segments) - tails < 3 or 2 * sum(items) < len(segments) - tails:
        return [False] * len(segments)
    return [at is None for at in predicates]


def bare(toks, segment: list[int], at: int) -> bool:
    """An instruction's verb with nothing to act on ("zero and almost everywhere", "clip."):
    after a lead-in, a name, not an instruction."""
    n = segment.index(at)
    return n + 1 >= len(segment) or toks[segment[n + 1]].text in ("and", "or")


_WH = frozenset({"where", "how", "why", "what", "which", "whether", "when", "who"})


def embedded_question(toks, segment: list[int]) -> bool:
    """"the question of A *and where B goes*": a wh-word after "and", "or", "of" or "about"
    opens a question named, not a claim."""
    words = [toks[i].text for i in segment]
    return any(w in _WH and n and words[n - 1] in ("and", "or", "of", "about") for n, w in enumerate(words))


def _contrast(toks, segment: list[int]) -> bool:
    """A stretch that denies an alternative to what came before it ("..., not inside"): a tail
    of the claim before it, not an item of a list."""
    words = tuple(toks[i].text for i in segment[:3])
    return words[0] in lx.NEGATORS or any(words[:len(p)] == p for p in lx.NEGATING_PHRASES)


def _acts(toks, segment: list[int], at: int) -> bool:
    """Whether the verb at ``at`` takes an object: a determiner or a pronoun follows it."""
    n = segment.index(at)
    nxt = toks[segment[n + 1]].text if n + 1 < len(segment) else None
    return nxt is not None and toks[at].text != "times" and (
        nxt in lx.DETERMINERS and nxt not in lx.NUMBER_WORDS or nxt in lx.PRONOUNS)
