"""What one English word can be: its lemmas (``kept`` is ``keep``), whether it can be a verb,
and the small closed classes (negators, determiners, modals...) the clause reader needs.

The open classes come from lemminflect, a PyPI package that ships its English lexicon (a table
of about 70,000 word forms with their part of speech and lemma). Its table is read directly,
on first use (about 0.07 s): importing the package would import numpy and probe for spaCy,
which ``grade interview`` does not need. Nothing is downloaded. A suffix rule covers the words
the table lacks, and the kit's own verbs (``recompute``, ``shard``, ``unscale``) that a general
lexicon does not know. Without the package, the suffix rule alone applies. Results are cached.
"""
from __future__ import annotations

import bisect
from functools import lru_cache

NEGATORS = frozenset({"not", "no", "never", "nothing", "none", "nor", "neither", "without",
                      "cannot", "nobody", "nowhere", "neither"})
"""Words that deny what follows them in their stretch of the clause ("doesn't" is read as
"does not", "can't" as "cannot")."""
NEGATING_PHRASES = (("instead", "of"), ("rather", "than"), ("as", "opposed", "to"), ("in", "place", "of"),
                    ("no", "longer"))
"""Phrases that deny what follows ("put eps inside instead of outside the root")."""
DETERMINERS = frozenset({"the", "a", "an", "each", "every", "all", "its", "their", "this", "that",
                         "these", "those", "his", "her", "our", "your", "my", "some", "any", "both",
                         "one", "two", "several", "many", "few", "more", "less", "no", "another",
                         "other", "whole", "same", "only"})
PRONOUNS = frozenset({"i", "you", "we", "they", "it", "he", "she", "one", "this", "that", "which",
                      "who", "there", "everything", "something", "each", "what", "nothing", "those",
                      "these", "them", "us", "me"})
SUBJECT_PRONOUNS = frozenset({"i", "you", "we", "they", "it", "he", "she", "there", "which", "who",
                              "that", "this", "nothing", "everything", "something", "everyone"})
AUXILIARIES = frozenset({"is", "are", "was", "were", "be", "been", "being", "am", "has", "have",
                         "had", "do", "does", "did", "can", "could", "will", "would", "shall",
                         "should", "may", "might", "must", "cannot", "need", "needs", "gets",
                         "get", "got", "becomes", "become", "became", "stays", "stay", "remains",
                         "equals", "goes", "went", "says", "said", "comes", "came", "makes", "made",
                         "takes", "took", "gives", "gave"})
"""Words that make a clause a statement wherever they stand (copulas, modals)."""
ADVERBS = frozenset({"only", "also", "just", "then", "first", "never", "always", "simply", "directly",
                     "still", "instead", "actually", "really", "usually", "typically", "basically",
                     "now", "so", "and", "both", "again", "later", "therefore", "thus", "hence",
                     "exactly", "often", "merely", "already", "not", "effectively", "essentially",
                     "quietly", "correctly", "properly", "separately", "explicitly", "automatically",
                     "all", "each", "you", "we", "i", "they", "it", "please", "n't", "must", "otherwise", "but",
                     "finally", "next", "afterwards", "yet", "because", "since", "while"})
"""Words after which a verb-or-noun word reads as a verb ("we sum", "then clip", "to keep")."""
PREPOSITIONS = frozenset({"to", "of", "in", "on", "at", "by", "for", "with", "from", "into", "over",
                          "across", "through", "after", "before", "outside", "inside", "under",
                          "above", "below", "between", "per", "via", "onto", "within", "along",
                          "around", "about", "against", "near", "back", "up", "down", "out", "off", "away",
                          "as", "like", "than", "only", "everywhere", "elsewhere", "once", "twice",
                          "again", "together", "instead", "directly", "evenly", "together"})
NUMBER_WORDS = frozenset({"zero", "one", "two", "three", "four", "half", "once", "twice"})
CARDINALS = NUMBER_WORDS | frozenset({"five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
                                      "sixteen", "twenty", "thirty", "hundred", "thousand", "million", "billion"})
"""Numbers in words: a quantity, like a number ("Adam costs sixteen bytes")."""
CONDITIONS = frozenset({"if", "unless", "when", "whenever", "once", "where", "wherever", "whether"})
SETTINGS = frozenset({"on", "after", "for", "with", "in", "at", "during", "without", "given", "upon",
                      "before", "per"})
"""Words that open a phrase setting the scene for a claim: "On overflow: skip the step"."""
INTERROGATIVES = frozenset({"why", "how", "what", "whether", "which"})
FUNCTION_WORDS = (DETERMINERS | PRONOUNS | AUXILIARIES | CONDITIONS | NEGATORS
                  | frozenset({"to", "of", "in", "on", "at", "by", "for", "with", "from", "as", "like", "than"})
                  | frozenset({"and", "or", "but", "so", "because", "since", "while", "then", "also",
                               "just", "really", "very", "is", "be", "it", "s", "t", "if", "do",
                               "does", "did", "done", "get", "got", "there", "here", "thing", "way",
                               "what", "why", "how", "when", "where", "which", "who", "whose", "yes",
                               "ok", "okay", "right", "well", "say", "said", "basically", "like",
                               "actually", "kind", "sort", "lot", "bit"}))
"""Words that carry no claim of their own: they neither count as the answer's own words
against the question's, nor make evidence."""

IMPERATIVES = frozenset({"use", "keep", "count", "run", "take", "make", "put", "set", "add", "check",
                         "store", "save", "compute", "call", "apply", "divide", "multiply", "subtract",
                         "pass", "send", "give", "treat", "pretend", "write", "do", "let", "try", "start",
                         "avoid", "log", "track", "measure", "compare", "verify", "return", "zero",
                         "normalise", "normalize", "accumulate", "recompute", "cache", "record", "route",
                         "detach", "truncate", "unroll", "walk", "go", "push", "pull", "draw", "sample",
                         "move", "replace", "exclude", "reuse", "remember", "drop", "split", "launch",
                         "guard", "ship", "prefer", "pick", "choose", "break", "halve", "double", "reset",
                         "weight", "scale", "clip", "skip", "shard", "checkpoint", "mask", "sum", "spread",
                         "shift", "flip", "fuse", "gather", "scatter", "broadcast", "cast", "upcast", "downcast",
                         "cap", "reduce", "invert", "pad", "rescale", "unscale", "debias", "decouple", "exempt",
                         "offload", "rebuild", "reconstruct", "differentiate", "propagate", "carry", "decay"})
"""Verbs that open an instruction ("use fp32 for the sums", "count real tokens"): at the start
of a stretch they are read as imperatives whatever follows."""
NEED_WORDS = frozenset({"need", "needed", "needs", "necessary", "required", "require", "requires",
                        "matter", "matters", "important", "used", "useful", "help", "helps", "true",
                        "the", "case", "right", "correct", "relevant"})
"""After a negation, words that deny the whole clause: "n_k / N is not needed"."""
KIT_VERBS = frozenset({"recompute", "rematerialise", "rematerialize", "backprop", "backpropagate",
                       "unscale", "debias", "shard", "checkpoint", "upcast", "downcast", "detach",
                       "normalise", "normalize", "quantise", "quantize", "dequantise", "dequantize",
                       "materialise", "materialize", "unroll", "reparameterise", "reparameterize",
                       "broadcast", "vectorise", "vectorize", "accumulate", "zero", "cast", "clamp",
                       "route", "scatter", "gather", "rescale", "renormalise", "renormalize",
                       "fuse", "tile", "mask", "clip", "sum", "average", "cache", "store", "save",
                       "reuse", "overwrite", "skip", "halve", "double", "decay", "exempt", "seed", "decouple",
                       "exponentiate", "parallelise", "parallelize", "offload", "binarise",
                       "binarize", "subtract", "flatten", "unflatten", "recurse", "memoise", "memoize", "sync", "resync",
                       "allreduce"})
"""Verbs of the trade that a general lexicon does not know, or knows only as nouns."""
_SUFFIXES = (("ies", "y"), ("sses", "ss"), ("xes", "x"), ("ches", "ch"), ("shes", "sh"), ("ing", ""),
             ("ed", ""), ("es", "e"), ("s", ""))


@lru_cache(maxsize=1)
def _table() -> list[str]:
    """lemminflect's lemma table, ``word,category,lemma/lemma`` lines, sorted; empty without it."""
    import gzip
    import importlib.util
    import os
    try:
        spec = importlib.util.find_spec("lemminflect")
        folder = spec.submodule_search_locations[0] if spec and spec.submodule_search_locations else None
        with open(os.path.join(folder, "resources", "lemma_lu.csv.gz"), "rb") as f:
            return sorted(gzip.decompress(f.read()).decode("utf-8").split("\n"))
    except (OSError, TypeError, ValueError, EOFError):
        return []


@lru_cache(maxsize=None)
def _forms(word: str) -> dict:
    """``{part of speech: (lemma, ...)}`` for ``word`` (empty when the lexicon does not know it)."""
    if not word.isalpha():
        return {}
    table, key, found = _table(), word + ",", {}
    i = bisect.bisect_left(table, key)
    while i < len(table) and table[i].startswith(key):
        parts = table[i].split(",")
        if len(parts) == 3:
            found[parts[1].upper()] = tuple(parts[2].split("/"))
        i += 1
    return found


def _guess(word: str) -> str:
    """A lemma for a word the lexicon does not know: the longest suffix rule that leaves a stem
    of three letters or more (``recomputed`` -> ``recompute``, ``shards`` -> ``shard``)."""
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: len(word) - len(suffix)] + replacement
            if suffix in ("ing", "ed"):
                for candidate in (stem + "e", stem, stem[:-1] if stem[-1:] == stem[-2:-1] else stem):
                    if candidate in KIT_VERBS or _forms(candidate):
                        return candidate
                return stem
            return stem
    return word


@lru_cache(maxsize=None)
def lemmas(word: str) -> frozenset:
    """Every lemma ``word`` can have, itself included (``kept``: keep; ``sums``: sum)."""
    found = {word}
    for options in _forms(word).values():
        found.update(o.lower() for o in options)
    if len(found) == 1 and word.isalpha():
        found.add(_guess(word))
    return frozenset(found)


@lru_cache(maxsize=None)
def can_be_verb(word: str) -> bool:
    """Whether ``word`` can be a verb form (``adds``, ``kept``, ``recomputed``, ``sum``)."""
    if not word.isalpha() or len(word) < 2:
        return False
    forms = _forms(word)
    if "VERB" in forms or "AUX" in forms:
        return True
    if lemmas(word) & KIT_VERBS:
        return True
    if not forms and word.endswith("ed") and len(word) > 5:
        return True  # an unknown past form: "rematerialised"
    return not forms and any("VERB" in _forms(lemma) for lemma in lemmas(word) if lemma != word)


@lru_cache(maxsize=None)
def only_verb(word: str) -> bool:
    """Whether ``word`` is a verb form and nothing else (``accumulates``, ``kept``, ``goes``)."""
    forms = _forms(word)
    if forms:
        return set(forms) <= {"VERB", "AUX"}
    return can_be_verb(word) and word.endswith(("ed", "es"))


def participle(word: str) -> bool:
    """A past form that can describe a state (``decoupled``, ``cached``, ``kept``, ``lost``)."""
    return can_be_verb(word) and (word.endswith(("ed", "en")) or word in _IRREGULAR_PAST)


_IRREGULAR_PAST = frozenset({"kept", "lost", "won", "held", "left", "put", "set", "spread", "split",
                             "cut", "fed", "built", "sent", "spent", "stored", "thrown", "known",
                             "written", "chosen", "taken", "given", "done", "gone", "seen", "shown"})
