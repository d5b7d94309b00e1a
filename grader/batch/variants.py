"""Per-student variants: each student's hidden inputs come from their own seed.

``seed = HMAC-SHA256(course secret, [student, assignment, question])``, its first 48 bits as
an integer. Two students get different inputs (a collision among 30,000 students has odds of
about one in 600,000), one question's seed says nothing about another's, and without the
secret nobody can tell which seed a student gets (HMAC is a keyed pseudo-random function).
The seed never reaches a student: their reports carry a replay token (replay_token.py), and
each course run also draws a value at grading time (engine/draws.py), so even a known seed
does not give the inputs. Without a secret every student gets the default seed, as `grade`.

The secret comes from ``--secret-file`` (best), ``BACKPROP_TRAPS_SECRET`` or ``--secret``.
Learner code can read ``/proc/<pid>/environ`` and ``/proc/<pid>/cmdline`` of the grader's
processes (Landlock does not cover them), so the batch runner blanks the secret there
(``hide_secret_from_proc``) before any submission runs, and grading workers never get it:
they receive seeds only.
"""
from __future__ import annotations

import ctypes
import hashlib
import hmac
import json
import os
import unicodedata

SECRET_ENV = "BACKPROP_TRAPS_SECRET"
SEED_BITS = 48


def student_seed(secret: str | bytes | None, student: str, default: int,
                 assignment: str | None = None, question: str | None = None) -> int:
    """The seed of ``student``'s hidden inputs for ``question`` of ``assignment``; ``default``
    when there is no secret.

    A course's runs name all three: ``HMAC(secret, [student, assignment, question])``, so one
    question's seed says nothing about another question's or another assignment's. Without
    ``assignment`` and ``question`` it is ``HMAC(secret, student)``, a student's seed before
    issue 35 (kept for callers that name a student only). Ids are NFC-normalised, so the same
    name typed on two systems gives one seed."""
    if not secret:
        return default
    key = secret.encode() if isinstance(secret, str) else secret
    nfc = lambda text: unicodedata.normalize("NFC", text or "")  # noqa: E731
    if assignment is None and question is None:
        msg = nfc(student).encode()
    else:
        msg = json.dumps(["seed", nfc(student), nfc(assignment), nfc(question)]).encode()
    digest = hmac.new(key, msg, hashlib.sha256).digest()
    return int.from_bytes(digest[: SEED_BITS // 8], "big")


def read_secret(secret: str | None, secret_file: str | None) -> str | None:
    """The course secret from the options or the environment (file, then flag, then env)."""
    if secret_file:
        with open(secret_file, encoding="utf-8") as f:
            text = f.read().strip()
        if not text:  # never fall back to the public default seed unnoticed
            raise EmptySecret(f"{secret_file} is empty: put the course secret in it (any long random "
                              "text, e.g. `python -c 'import secrets; print(secrets.token_hex(32))'`)")
        return text
    return secret or os.environ.get(SECRET_ENV) or None


class EmptySecret(ValueError):
    """The secret file holds nothing; the message is a sentence for the instructor."""


def hide_secret_from_proc(secret: str | None) -> bool:
    """Blank the secret in this process's original argv and environment block, the memory
    that ``/proc/<pid>/cmdline`` and ``/proc/<pid>/environ`` show to other processes.

    Only the value of ``--secret`` (``--secret=...`` or the argument after it) and of
    ``BACKPROP_TRAPS_SECRET=`` are overwritten; Python's own copies (``sys.argv``,
    ``os.environ``) are untouched. Returns False where this is not possible (no /proc)."""
    if not secret:
        return True
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        # Fields 48-51 of proc(5) (counted from 1); after the ')' the list starts at field 3.
        arg_start, arg_end, env_start, env_end = (int(x) for x in fields[45:49])
    except (OSError, ValueError, IndexError):
        return False
    value = secret.encode()
    _blank(arg_start, arg_end, lambda entry, prev: entry == value and prev == b"--secret",
           prefix=b"--secret=", value=value)
    _blank(env_start, env_end, lambda entry, prev: False, prefix=f"{SECRET_ENV}=".encode(), value=value)
    return True


def _blank(start: int, end: int, whole, prefix: bytes, value: bytes) -> None:
    """Overwrite with '*' each NUL-separated entry of [start, end) that ``whole`` accepts,
    and the part after ``prefix`` of each entry starting with it."""
    if not 0 < start < end:
        return
    block = ctypes.string_at(start, end - start)
    offset, prev = 0, b""
    for entry in block.split(b"\0"):
        if whole(entry, prev):
            ctypes.memset(start + offset, ord("*"), len(entry))
        elif entry.startswith(prefix) and len(entry) > len(prefix):
            ctypes.memset(start + offset + len(prefix), ord("*"), len(entry) - len(prefix))
        offset, prev = offset + len(entry) + 1, entry
