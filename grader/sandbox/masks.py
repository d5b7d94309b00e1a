"""How bubblewrap hides, inside the read-only Python folders it mounts, what learner code must
not read (the kit's installed entries, the submission's folder, a questions folder).

A hidden folder becomes an empty read-only tmpfs, a hidden file ``/dev/null``. Two shapes of
hidden paths broke that (issue 51, item 2), and each made bwrap fail for one run only, which
the grader then took for a machine without bubblewrap:

- a hidden path inside another hidden folder: its mount point would have to be made inside the
  read-only tmpfs that already hides it ("Can't mkdir ...: Read-only file system"), e.g. a
  solution graded from ``site-packages/backprop_traps/grader/content/solutions``. It is hidden
  already: no mount of its own.
- a hidden folder that holds Python itself (a virtual environment made in the learner's own
  folder, ``python -m venv .``): a tmpfs there would hide Python from the sandbox. Its entries
  are hidden one by one instead, all but the way down to what Python needs.
"""
from __future__ import annotations

import os

MAX_ENTRIES = 2000
"""The most entries one sandbox hides one by one (each is a mount): past it, the sandbox does
not start, with that said, rather than start slowly or partly masked."""


class MaskError(Exception):
    """The hidden paths cannot be masked for this sandbox (said in one sentence)."""


def within(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or lies below it."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def mask_arguments(hidden: list[str], roots: list[str], needed: list[str]) -> list[str]:
    """bwrap's arguments that hide each of ``hidden`` lying inside one of ``roots`` (the
    read-only Python folders), never hiding ``needed`` (Python's own folders and files) nor
    making a mount point inside a folder already hidden."""
    inside = {os.path.normpath(p) for p in hidden
              if any(within(os.path.normpath(p), r) for r in roots) and os.path.lexists(p)}
    args: list[str] = []
    masked: list[str] = []  # folders hidden whole: nothing below them needs a mount
    entries = 0
    for path in sorted(inside):  # an ancestor sorts before what lies below it
        if any(within(path, folder) for folder in masked):
            continue
        if not any(within(need, path) for need in needed):
            args += _hide(path)
            if os.path.isdir(path):
                masked.append(path)
            continue
        if path in needed or not os.path.isdir(path):
            continue  # Python's own file: the sandbox cannot run without it
        for entry in _entries_to_hide(path, needed):  # holds Python: hide around it
            entries += 1
            if entries > MAX_ENTRIES:
                raise MaskError(f"{path} holds Python's own folders and more than {MAX_ENTRIES} other "
                                "entries to hide one by one; move the submission to a folder of its own")
            args += _hide(entry)
            if os.path.isdir(entry):
                masked.append(entry)
    return args


def _hide(path: str) -> list[str]:
    return ["--tmpfs", path, "--remount-ro", path] if os.path.isdir(path) else ["--ro-bind", "/dev/null", path]


def _entries_to_hide(folder: str, needed: list[str]) -> list[str]:
    """The entries below ``folder`` that are none of ``needed`` nor on the way down to one."""
    try:
        names = sorted(os.listdir(folder))
    except OSError as e:
        raise MaskError(f"could not list {folder} to hide it ({e.strerror or e})") from None
    out: list[str] = []
    for name in names:
        entry = os.path.join(folder, name)
        if os.path.islink(entry):
            continue  # a mount would land on its target; what that shows is the roots' anyway
        if any(within(entry, need) for need in needed):
            continue  # Python's own (or inside it): visible
        if any(within(need, entry) for need in needed):
            out += _entries_to_hide(entry, needed)  # on the way down to Python: open it up
            if len(out) > MAX_ENTRIES:
                break
        else:
            out.append(entry)
    return out
