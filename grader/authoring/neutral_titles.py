"""``grade validate``'s proof that check titles give nothing away (issue 38, item 4).

Grading the untouched stub lists every check by its title, so a title says *what* is checked
(which function or output, on which inputs) and never the rule an answer must follow: the
trap is named only in a failing result, and the rule only behind ``--hint``. A title leaks
when it holds:

1. a trap id of its question, hyphenated or as words (``last-step-only``, "last step only");
2. a rule word (``RULES``): a property the right answer has ("accumulate", "sums over",
   "unbiased variance", "through atomics", "shrinks directly", "carried back"), or a value it
   must give, stated as a fact ("its derivative there is 0");

The list is curated: a new question whose rule no entry catches adds its words here.
Code names (``accumulated_grads``, ``max_norm``) are not words here. Only the standard library
and the question's own objects: this runs in ``grade validate`` and in the tests.
"""
from __future__ import annotations

import re

from backprop_traps.grader.authoring.findings import FAIL, OK, QuestionReport

RULES = [
    r"accumulat\w*", r"sums?", r"summed", r"add(?:s|ed)? up", r"adds? into", r"carri\w*", r"carry",
    r"cross(?:es|ing)?", r"shrinks?", r"directly", r"decoupl\w*", r"atomics?", r"unbiased",
    r"biased variance", r"inside", r"outside", r"first maximum", r"half to even", r"depends?",
    r"orthogonal", r"inclusive", r"only", r"never", r"always", r"plain gradient", r"restarts?",
    r"backs? off", r"detach\w*", r"recomput\w*", r"averaged", r"one bit", r"gated", r"packed",
    r"routes?", r"flows?", r"in place", r",\s*not", r"global norm", r"one factor", r"master copy",
    r"10\^9", r"2\^30", r"every saved tensor", r"use the",
    # a value the answer must give, stated as a fact ("the ReLU's derivative there is 0")
    r"(?:is|are|equals?|becomes?)\s+(?:[-+]?\d+(?:\.\d+)?|zero|one|none|nothing)",
]
"""Words and phrases that state a rule the right answer follows (regular expressions, matched
as whole words, case-insensitive)."""
_CODE_NAME = re.compile(r"\b\w+_\w+\b")


def rule_words(title: str) -> list[str]:
    prose = _CODE_NAME.sub(" ", title)
    found = []
    for rule in RULES:
        start = r"(?<![\w-])" if re.match(r"\w", rule) else ""
        match = re.search(rf"{start}(?:{rule})(?![\w-])", prose, re.I)
        if match:
            found.append(match.group(0))
    return found


def leaks(title: str, traps) -> list[str]:
    """What in ``title`` gives a trap away (see the module docstring); [] when nothing does."""
    found = []
    lowered = title.lower()
    for trap in traps:
        if trap.id in lowered or " ".join(trap.id.split("-")) in lowered:
            found.append(f"the trap id {trap.id}")
    found += [f"'{word}' (states a rule)" for word in rule_words(title)]
    return found


def check_titles(report: QuestionReport, question) -> None:
    """One finding: every check title of ``question`` (a ``Question``) is neutral."""
    bad = [f"{check.name!r}: {', '.join(found)}" for check in question.checks
           if (found := leaks(check.name, question.traps))]
    if bad:
        report.add(FAIL, "check titles give traps away before any attempt (say what is checked, "
                         "on which inputs; the rule belongs in the hints)", bad)
    else:
        report.add(OK, "check titles name what is checked, never a trap or its rule")
