"""Directions: words that state one side of a comparison, and the word for the other side.

A key point often states a direction: eps goes *outside* the root, the gradients *accumulate*
(not overwrite), the ratio sits *near* 1e-3, the variance is *higher* with a smaller batch, the
forward saves the *input*. An answer that says the other side ("*inside* the root", "*lower*
variance", "saves the *output*") denies the point, whatever else it shares with it. This table
is the one place that knows the sides: the matcher (grader/learner/keypoints.py) refuses a
claim that states the opposite of a direction its point's phrase states, and the claim mutant
generator (grader/authoring/claim_mutants.py) swaps them to prove it does. Standard library only.
"""
from __future__ import annotations

from functools import lru_cache

_PAIRS = """
higher lower; high low; more less; larger smaller; large small; bigger smaller; greater smaller
increase decrease; increases decreases; increased decreased; increasing decreasing
grow shrink; grows shrinks; grew shrank; growing shrinking; rise fall; rises falls
inside outside; before after; above below; first last; earliest latest
keep drop; keeps drops; kept dropped; save discard; saves discards; saved discarded
accumulate overwrite; accumulates overwrites; accumulated overwritten; accumulating overwriting
accumulation overwriting; sum overwrite; sums overwrites; summed overwritten; += =
always never; exact approximate; exactly approximately
deterministic nondeterministic; smooth noisy; smoother noisier; smoothly noisily
stable unstable; min max; minimum maximum; winner loser; positive negative
multiply divide; multiplies divides; multiplied divided; subtract add; subtracts adds
subtracted added; minus plus; halves doubles; halve double
evenly unevenly; faster slower; fast slow; cheaper costlier
sparse dense; optimal suboptimal; correct wrong; unchanged attenuated; near far from
""".strip()
"""Sides of a comparison: a claim that says one where its point says the other denies it."""
_ROLES = """
forward backward; forwards backwards; input output; inputs outputs; row column; rows columns
scatter gather; transpose inverse; once twice; expensive cheap; same different; shared separate
fp32 fp16; float32 float16
""".strip()
"""Names of the two ends of something (the forward and the backward, a row and a column): a
claim names both often enough that saying one is no denial of the other; the mutant generator
still swaps them."""


def _table(text: str, table: dict) -> dict[str, str]:
    for line in text.splitlines():
        for pair in line.split(";"):
            words = pair.split()
            if len(words) >= 2:
                a, b = words[0], " ".join(words[1:])
                table.setdefault(a, b)
                table.setdefault(b, a)
    return table


@lru_cache(maxsize=2)
def opposites(roles: bool = False) -> dict[str, str]:
    """Each direction word and the word for the other side (the first pair that names it);
    with ``roles``, the names of two ends as well."""
    table = _table(_PAIRS, {})
    return _table(_ROLES, table) if roles else table


def opposite(word: str, roles: bool = False) -> str | None:
    """The word for the other side of ``word`` (lower case), or None when it states no side."""
    return opposites(roles).get(word.lower())


def stated(words) -> frozenset:
    """The direction words among ``words`` (already spelled as the answer reader spells them)."""
    table = opposites()
    return frozenset(w for w in words if w in table and " " not in w)
