"""What a key point's own phrase states: its directions ("outside", "accumulate") and its
quantities ("16 bytes", "one extra forward"), read the way an answer is read (``clauses``)
and counted the way ``polarity`` counts an answer's. A module of its own: ``clauses`` reads
with ``polarity``, and this reads with both."""
from __future__ import annotations

from backprop_traps.grader.learner import clauses, directions, polarity


def stated(phrase: str) -> tuple[frozenset, frozenset]:
    """The directions a point's phrase states (not those it denies: "x, not the output"), and
    the quantities it states ("16 bytes", "a 1-bit mask", "one extra forward")."""
    reading = clauses.read(phrase)
    said = [t for t, negated in zip(reading.tokens, reading.negated) if not negated]
    figures = {(polarity.unit(reading.tokens, i), polarity.quantity(t)) for i, t in enumerate(reading.tokens)
               if (t.kind == "num" or t.text not in ("zero", "single")) and not reading.negated[i]}
    return directions.stated(t.text for t in said), frozenset((u, q) for u, q in figures if u and q is not None)
