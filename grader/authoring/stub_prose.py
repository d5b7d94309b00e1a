"""What a learner reads in a stub: its markdown, and its code cells' comments and docstrings.

Both of ``grade validate``'s stub proofs read this prose: ``stub_leaks`` (no solution code in
it) and ``named_mistakes`` (no pointer at a graded mistake in it). It is its own module so
that neither of the two has to import the other.
"""
from __future__ import annotations

import io
import tokenize


def prose_of_code(source: str) -> str:
    """A code cell's comments and string literals (its docstrings), one per line."""
    kinds = {tokenize.COMMENT, tokenize.STRING}
    try:
        return "\n".join(tok.string.lstrip("#") for tok in
                         tokenize.generate_tokens(io.StringIO(source).readline) if tok.type in kinds)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return source


def stub_prose(stub: dict) -> str:
    """What a learner reads in the stub: markdown, and code cells' comments and docstrings."""
    parts = []
    for cell in stub["cells"]:
        source = "".join(cell.get("source", ""))
        parts.append(source if cell.get("cell_type") == "markdown" else prose_of_code(source))
    return "\n".join(parts)
