"""No silent fall back: a grading process remembers the inner layers (seccomp, Landlock)
its sandboxes had in place, and a later sandbox that lacks one of them must not run."""
from __future__ import annotations

_INNER_SEEN: set[str] = set()
"""The inner layers (seccomp, landlock) a sandbox of this process has had in place."""


def layers_lost(inner: str) -> str:
    """Why this sandbox must not run, where a layer that an earlier sandbox of this process
    had in place failed this time ("no landlock (...)"): a grading process never goes on
    silently with fewer layers. Empty where nothing was lost."""
    parts = [p.strip() for p in inner.split(", ") if p.strip() and p.strip() != "none"]
    missing = [p for p in parts if p.startswith("no ") and p[3:].split(" ")[0] in
               {seen.split("-")[0] for seen in _INNER_SEEN}]
    _INNER_SEEN.update(p for p in parts if not p.startswith("no "))
    return f"{', '.join(missing)}, where earlier sandboxes had it" if missing else ""
