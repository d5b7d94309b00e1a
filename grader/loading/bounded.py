"""Reading a file from a learner's folder, the one bounded way: nothing there can hang, crash
or exhaust the grader.

Every file the grader reads from a folder a learner controls goes through here: the history
(``.backprop_traps_history.json``), ``grade interview --answer FILE``, submissions, a batch's
``timestamp.txt`` and stored results. The rules, in order:

- opened with ``O_NOFOLLOW | O_NONBLOCK``: a symbolic link is refused, not followed (a link to
  ``/dev/zero`` reads nothing), and opening a FIFO never waits for a writer;
- ``fstat`` on the open descriptor says it is a regular file (a FIFO, a device, a socket or a
  folder is refused);
- its size is checked against a cap before reading, and no more than the cap is ever read
  (a file that grows meanwhile is refused, or cut at the cap where the caller asks);
- JSON is parsed only after a scan of its bracket depth (C-speed string passes, no
  recursion) and an upper bound on its values: 200,000 nested lists are refused before
  ``json.loads`` could recurse.

Any failure, whatever it is (``OSError``, ``ValueError``, ``RecursionError``,
``MemoryError``...), becomes ``Unreadable`` with one sentence; ``missing`` says the file was
simply not there. Callers decide what a broken file means (the history sets a broken regular
file aside and leaves anything else where it is).
"""
from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
CHUNK = 1 << 20
JSON_DEPTH = 64
"""Deepest nesting read at all (a notebook nests about 6 deep, the history 5)."""
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


class Unreadable(ValueError):
    """The file cannot be read the bounded way; ``str()`` is a sentence naming it."""

    def __init__(self, sentence: str, missing: bool = False, regular: bool = True, too_big: bool = False):
        super().__init__(sentence)
        self.too_big = too_big
        """It is over the cap (by its size before reading, or it grew past it while read)."""
        self.missing = missing
        """Nothing was there (or a folder on its path was missing)."""
        self.regular = regular
        """It is (or was, when opened) a regular file: False for a link, FIFO, device, folder."""


def _kind(mode: int) -> str:
    return ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")


def _open(path: Path) -> int:
    try:
        return os.open(path, FLAGS)
    except FileNotFoundError:
        raise Unreadable(f"{path.name} does not exist", missing=True) from None
    except OSError as e:
        try:
            info = os.lstat(path)
        except OSError:
            info = None
        if info is not None and stat.S_ISLNK(info.st_mode):
            raise Unreadable(f"{path.name} is a symbolic link; links are not followed "
                             "(use the file itself)", regular=False) from None
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise Unreadable(f"{path.name} is {_kind(info.st_mode)}, not a regular file", regular=False) from None
        raise Unreadable(f"{path.name} cannot be read ({e.strerror or e})") from None


def chunks(path: str | os.PathLike, cap: int, cut: bool = False):
    """The bytes of ``path`` in chunks of at most 1 MB, under the rules above; ``cut`` reads
    the first ``cap`` bytes of a bigger file instead of refusing it."""
    path = Path(path)
    fd = _open(path)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable(f"{path.name} is {_kind(info.st_mode)}, not a regular file", regular=False)
        if info.st_size > cap and not cut:
            raise Unreadable(f"{path.name} is {_size(info.st_size)}, over the {_size(cap)} it may be",
                             too_big=True)
        left = cap if cut else cap + 1
        while left > 0:
            chunk = os.read(fd, min(left, CHUNK))
            if not chunk:
                return
            left -= len(chunk)
            if left <= 0 and not cut:
                raise Unreadable(f"{path.name} grew past {_size(cap)} while it was read", too_big=True)
            yield chunk
    except Unreadable:
        raise
    except Exception as e:  # noqa: BLE001 (whatever it is, it is a file we cannot read)
        raise Unreadable(f"{path.name} cannot be read ({getattr(e, 'strerror', None) or type(e).__name__})") from None
    finally:
        os.close(fd)


def read_bytes(path: str | os.PathLike, cap: int, cut: bool = False) -> bytes:
    """The whole file (at most ``cap`` bytes), or ``Unreadable``."""
    try:
        return b"".join(chunks(path, cap, cut))
    except Unreadable:
        raise
    except Exception as e:  # noqa: BLE001 (MemoryError joining, ...)
        raise Unreadable(f"{Path(path).name} cannot be read ({type(e).__name__})") from None


def read_text(path: str | os.PathLike, cap: int, encoding: str = "utf-8") -> str:
    """The file decoded (``utf-8-sig`` drops a byte-order mark), or ``Unreadable``."""
    data = read_bytes(path, cap)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as e:
        raise Unreadable(f"{Path(path).name} is not UTF-8 text (bad byte at position {e.start})") from None


def json_shape_error(text: str, max_depth: int = JSON_DEPTH, max_values: int | None = None) -> str | None:
    """Why ``text`` must not reach ``json.loads`` (too deep, too many values, brackets that
    cannot be JSON's), or None. Strings are cut out first, then innermost ``[]``/``{}`` pairs
    are removed a pass at a time: each pass removes at least one level, so more than
    ``max_depth`` passes means deeper than ``max_depth`` (at most ``2 * max_depth`` passes
    through; recursion limit 1,000)."""
    if max_values is not None and text.count("[") + text.count("{") + text.count(",") > max_values:
        return f"it holds more than {max_values:,} JSON values"
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    for _ in range(max_depth + 1):
        if not brackets:
            return None
        shorter = brackets.replace("[]", "").replace("{}", "")
        if shorter == brackets:
            return "it is not valid JSON (its brackets do not pair up)"
        brackets = shorter
    return f"it nests deeper than {max_depth} levels"


def loads(text: str, name: str, max_depth: int = JSON_DEPTH, max_values: int | None = None):
    """``json.loads(text)`` after ``json_shape_error``; any failure is ``Unreadable``."""
    why = json_shape_error(text, max_depth, max_values)
    if why is not None:
        raise Unreadable(f"{name} is not usable JSON: {why}")
    try:
        return json.loads(text)
    except Exception as e:  # noqa: BLE001 (ValueError, RecursionError, MemoryError: all broken)
        detail = f"line {e.lineno}, column {e.colno}" if isinstance(e, json.JSONDecodeError) else type(e).__name__
        raise Unreadable(f"{name} is not valid JSON ({detail})") from None


def read_json(path: str | os.PathLike, cap: int, max_depth: int = JSON_DEPTH, max_values: int | None = None):
    """The file's JSON value, read and parsed the bounded way, or ``Unreadable``."""
    return loads(read_text(path, cap), Path(path).name, max_depth, max_values)


def _size(n: int) -> str:
    return f"{n / 2**20:,.0f} MB" if n >= 2**20 else f"{n / 1024:,.0f} KB" if n >= 1024 else f"{n} bytes"
