"""Work that does not depend on the learner, kept between a learner's practice runs (issue 47).

Some checks build their inputs at a real cost before any learner code runs: training_symptoms
trains sixteen small networks per seed (about 3 CPU seconds), the same sixteen on every try of
a learner who grades again with the same seed. Within one process ``functools.lru_cache``
keeps them; between ``grade`` runs this folder does, keyed by the seed and by a digest of the
code that makes them (``version``), so a change to that code, or to numpy, never reads an
old entry. (The default seed's runs need neither: they ship with the kit, trained once by
``grade release``: checks/training_symptoms/shipped.py.)

Trust: a learner can write to their own cache folder, so what is read from it is believed only
where believing it cheats no one. It is read and written in a learner's own practice alone
(``grade FILE``, no course secret, no draw); a course (a batch, nbgrader, a replay, a secret)
never reads nor writes it and computes every input itself (a first try's helper processes,
training_symptoms/prefetch.py, write it in practice only, and are read the same way). Even in
practice an entry is read the bounded way (``loading/bounded.py``: no links, no FIFOs, a size
cap, a depth cap) and must hold exactly the arrays its maker declares, shape by shape
(``load``'s ``schema``); anything else is ignored and made again. The folder holds at most
``MAX_BYTES``: the oldest entries go first.

``BACKPROP_TRAPS_CACHE`` names another folder, or ``off`` to keep nothing.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

ENV = "BACKPROP_TRAPS_CACHE"
MAX_BYTES = 64 << 20
"""The whole folder's size; past it the oldest entries are removed."""
MAX_ENTRY = 2 << 20
"""One entry's size: a bigger file is not read."""
FORMAT = 1


def folder() -> Path | None:
    """Where entries live: ``$BACKPROP_TRAPS_CACHE``, else the user's cache folder; None: off."""
    chosen = os.environ.get(ENV)
    if chosen == "off":
        return None
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "backprop-traps"


def version(*sources: Path) -> str:
    """A digest of the code that makes the entries (and of numpy, whose generators draw them)."""
    digest = hashlib.sha256(f"format {FORMAT} numpy {np.__version__}".encode())
    for source in sources:
        digest.update(Path(source).read_bytes())
    return digest.hexdigest()[:16]


def _root() -> Path | None:
    """This cache's own folder inside ``folder()``: the only one it ever trims (others keep
    their files there: the kernels' static compile, benchmarks/kernels_static.py)."""
    where = folder()
    return None if where is None else where / "practice"


def _path(namespace: str, ver: str, name: str) -> Path | None:
    root = _root()
    return None if root is None else root / namespace / ver / f"{name}.json"


def has(namespace: str, ver: str, name: str) -> bool:
    """Whether the entry ``name`` exists (a regular file; not read, so not yet believed)."""
    path = _path(namespace, ver, name)
    try:
        return path is not None and path.is_file() and not path.is_symlink()
    except OSError:
        return False


def load(namespace: str, ver: str, name: str, schema: dict) -> dict | None:
    """The entry ``name``, its arrays read-only, when it exists and matches ``schema``
    ({key: (dtype, shape)}, a shape's None matching any length); else None."""
    path = _path(namespace, ver, name)
    if path is None:
        return None
    from backprop_traps.grader.loading.bounded import Unreadable, read_json
    try:
        raw = read_json(path, MAX_ENTRY, max_depth=4)
        return matching(raw, schema)
    except (Unreadable, ValueError, TypeError, KeyError, OverflowError):
        return None


def matching(raw, schema: dict) -> dict | None:
    """``raw`` (plain values or arrays) as ``schema`` declares it, arrays read-only; else None."""
    if not isinstance(raw, dict) or set(raw) != set(schema):
        return None
    out = {}
    for key, (dtype, shape) in schema.items():
        if shape == ():
            value = raw[key]
            if not isinstance(value, int) or isinstance(value, bool):
                return None
            out[key] = value
            continue
        array = np.array(raw[key], dtype=dtype)
        if array.ndim != len(shape) or any(want is not None and got != want
                                           for got, want in zip(array.shape, shape)):
            return None
        array.setflags(write=False)
        out[key] = array
    return out


def store(namespace: str, ver: str, name: str, entry: dict) -> None:
    """Keep ``entry`` (arrays and ints); never raises (a cache that cannot be written is none)."""
    path = _path(namespace, ver, name)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in entry.items()})
        if len(text) > MAX_ENTRY:
            return
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".part-")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)  # whole or not at all: a reader never sees half an entry
        _trim(_root())
    except (OSError, ValueError, TypeError):
        pass


STALE_PART = 600
"""Seconds after which a half-written entry (``.part-*``: its writer was stopped before the
rename, as prefetch.py stops its helpers) is removed."""


def _trim(where: Path) -> None:
    """Remove the oldest entries (this cache's own, under ``where``) until they hold at most
    ``MAX_BYTES``, and half-written ones left by a writer that was stopped."""
    entries, stale = [], time.time() - STALE_PART
    for path in where.rglob("*"):
        try:
            if path.name.startswith(".part-"):
                if path.lstat().st_mtime < stale:
                    path.unlink()
            elif path.suffix == ".json":
                info = path.lstat()
                entries.append((info.st_mtime, info.st_size, path))
        except OSError:
            continue
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= MAX_BYTES:
            break
        try:
            path.unlink()
            total -= size
        except OSError:
            pass
