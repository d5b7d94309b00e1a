"""``--hint`` for a failure that names no trap but says where the values differ (issue 51).

A check's own hints may point at a mistake this answer does not make, so these start from the
difference the feedback located (grader/engine/feedback.py ``locate``) and follow it: the entry
to work out by hand, then what the differing entries share on this input, then how to find the
step that goes wrong. They quote only what the feedback already showed (names, positions,
values, the input's description), never the check's title or its rule.
"""
from __future__ import annotations

import re

_LOCATED = re.compile(r"`[^`\n]+` (?:differs at [^\n]*?entries|is \S+, expected \S+)")
_LARGEST = re.compile(r"`(?P<name>[^`\n]+)` differs at [^\n]*?The largest difference is at \[(?P<at>[^\]]*)\] "
                      r"\([^)]*\): expected (?P<want>\S+), yours (?P<mine>[^\s,]+)")
_SCALAR = re.compile(r"`(?P<name>[^`\n]+)` is (?P<mine>\S+), expected (?P<want>[^\s:]+):")
_PATTERN = re.compile(r"`(?P<name>[^`\n]+)` differs at (?:(?P<all>all) (?P<size>\d+) entries|(?P<count>\d+) of "
                      r"(?P<of>\d+) entries, (?:only in (?P<only>[^\n]*?)|spread over (?P<spread>[^\n]*?)))"
                      r"\. The largest")
_INPUT = re.compile(r"(?:\(([^()\n]*)\)|; input ([^\n]*?))\.?\s*$")
_SIZE = re.compile(r"^\s*[A-Za-z_]\w*\s*=\s*[\w.+-]+\s*$")


def from_difference(check, feedback: str) -> tuple[str, ...] | None:
    """Three hints that follow where ``feedback`` says the values differ; None when it locates
    nothing (then the check's own hints serve)."""
    if not _LOCATED.search(feedback):
        return None
    example = "The smallest input where yours is still wrong" in feedback
    start = "Start from the smallest input shown above" if example else "Start from the entry the feedback names"
    one = _LARGEST.search(feedback) or _SCALAR.search(feedback)
    if one is not None:
        entry = f"`{one['name']}" + (f"[{one['at']}]`" if "at" in one.groupdict() else "`")
        first = (f"{start}: {entry} should be {one['want']}, yours is {one['mine']}. Work it out by "
                 "hand, term by term: which terms of your formula reach it, and which one gives the "
                 "difference?")
    else:
        first = (f"{start}: work out the expected value there by hand, term by term, and compare it "
                 "with yours. Which terms of your formula reach that position?")
    special = _special_input(feedback)
    on = f" on this input ({special})" if special else ""
    pattern = _PATTERN.search(feedback)
    if pattern is not None and pattern["only"]:
        only = re.sub(r" \(of [^)]*\)( and )?", lambda m: ", " if m.group(1) else "", pattern["only"])
        second = (f"Only {pattern['count']} of {pattern['of']} entries of `{pattern['name']}` differ "
                  f"(in {only}); the others are right. What do those entries share{on} that the "
                  "right ones do not?")
    elif pattern is not None:
        second = (f"The differences in `{pattern['name']}` are everywhere: look for a step every entry "
                  "goes through (a factor, a sign, a transpose, an index), not a special case"
                  f"{on}.")
    else:
        second = (f"Change one input at a time{on} and watch which outputs move: which of your terms "
                  "depends on it, and does it in the expected one?")
    third = ("Print each intermediate of your computation for that entry next to your hand-worked "
             "one: the first that differs is the step to fix. Grade again then: the feedback shows "
             "the next difference, if any.")
    return first, second, third


def _special_input(feedback: str) -> str:
    """What the failing input's description says beyond its sizes ("with the skip,
    pre-activations exactly 0 in places"), from the feedback's first line; "" when nothing."""
    match = _INPUT.search(feedback.split("\n", 1)[0])
    if match is None:
        return ""
    parts = [p.strip() for p in (match.group(1) or match.group(2)).split(",")]
    return ", ".join(p for p in parts if p and not _SIZE.match(p))
