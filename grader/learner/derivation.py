"""A question's derivation, step by step: the markdown cells tagged ``derivation`` in its
solution notebook, in order. `grade reveal` shows them one at a time on the learner's path;
the stub layout (grader/authoring/stub_layout.py) drops them from the stub and ``grade
validate`` counts them, building on this module. Standard library only.
"""
from __future__ import annotations

DERIVATION = "derivation"


def tags(cell: dict) -> list:
    """A cell's ``metadata.tags`` (a list; empty where it has none or they are malformed)."""
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    found = meta.get("tags") if isinstance(meta, dict) else None
    return found if isinstance(found, list) else []


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def derivation_steps(nb: dict) -> list[str]:
    """The markdown of each derivation step, in notebook order (a dict or an nbformat node)."""
    return [_source(c).strip() for c in nb.get("cells", [])
            if isinstance(c, dict) and c.get("cell_type") == "markdown" and DERIVATION in tags(c)]
