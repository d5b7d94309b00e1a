"""A value drawn at grading time: what makes a course's hidden inputs unknowable beforehand.

The checks are open source and each one's inputs come from a seed, so whoever knows the seed
can build a check's inputs ahead of time (at load time, where nothing is measured) and keep
only the answers. In a course (`grade batch`, an nbgrader course set up with ``configure``)
each grading therefore draws 128 fresh bits from the operating system (``secrets``) and the
checks run on ``checks_seed(seed, draw)``: no one, the learner's code included, can know it
before the grading starts, and knowing the seed is worth nothing. The draw is recorded (the
result's ``draw``, the batch's ``.run.json``, the replay token), so the instructor replays
the run exactly. Practice (`grade FILE`) draws nothing: ``--seed N`` alone replays it.
"""
from __future__ import annotations

import os
import re

_DRAW = re.compile(r"^[0-9a-f]{32}$")
SECRET_ENV = "BACKPROP_TRAPS_SECRET"
"""A course secret in the environment (``batch.variants.SECRET_ENV``): grading is a course's."""


def is_practice(practice: bool | None, draw: str | None) -> bool:
    """Whether a grading is a learner's own practice: as asked, else unless a course secret is
    set or a value was drawn (``grade_path``'s ``practice``)."""
    if practice is not None:
        return practice
    return not os.environ.get(SECRET_ENV) and draw is None


def new_draw() -> str:
    """128 bits from the operating system's generator, as 32 hex digits."""
    import secrets  # here: `grade FILE` asks only is_practice before its sandbox starts
    return secrets.token_hex(16)


def is_draw(value) -> bool:
    return isinstance(value, str) and bool(_DRAW.match(value))


def checks_seed(seed: int, draw: str | None) -> int:
    """The seed every check's inputs come from: ``seed`` itself without a draw (practice, as
    `grade --seed` always was), else 64 bits of SHA-256 over both."""
    if draw is None:
        return seed
    import hashlib
    return int.from_bytes(hashlib.sha256(f"backprop-traps checks {seed} {draw}".encode()).digest()[:8], "big")
