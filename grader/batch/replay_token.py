"""The replay token: what a student's report carries instead of the seed.

A course's report goes back to the student (nbgrader's feedback page, `grade show`'s
reports), so it must not say the seed: the token names the run instead. It holds the
student, the assignment, the question and the value drawn at grading time, sealed with a key
derived from the course secret (deterministic authenticated encryption in the SIV pattern:
the first 16 bytes are an HMAC-SHA256 of the contents and the IV of an HMAC-SHA256 keystream
that hides them). Without the secret it reads as noise, and it cannot be altered or made
for another student, assignment or question. The instructor's `grade replay TOKEN FILE`
opens it with the secret, derives the seed (``variants.student_seed``) and grades FILE
exactly as that run did. It never holds the seed: the seed comes from the secret.

Without a course secret the key is derived from an empty secret: anyone can open such a
token, and there is nothing to hide (every student has the public default seed, and the
draw is spent once the run is over).
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass

PREFIX = "bpt1."
MAX_CHARS = 4096


class BadToken(ValueError):
    """Not a token this course's grader made; the message is a sentence for the instructor."""


@dataclass(frozen=True)
class Replay:
    """What a token names: one run of one question for one student."""
    student: str
    assignment: str
    question: str
    draw: str


def _keys(secret: str | bytes | None) -> tuple[bytes, bytes]:
    key = secret.encode() if isinstance(secret, str) else (secret or b"")
    root = hmac.new(key, b"backprop-traps replay token v1", hashlib.sha256).digest()
    return (hmac.new(root, b"seal", hashlib.sha256).digest(), hmac.new(root, b"hide", hashlib.sha256).digest())


def _keystream(key: bytes, iv: bytes, n: int) -> bytes:
    blocks = (hmac.new(key, iv + i.to_bytes(4, "big"), hashlib.sha256).digest() for i in range(n // 32 + 1))
    return b"".join(blocks)[:n]


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b))


def make(secret: str | bytes | None, replay: Replay) -> str:
    """The token of ``replay`` under the course ``secret``."""
    seal, hide = _keys(secret)
    plain = json.dumps([replay.student, replay.assignment, replay.question, replay.draw],  # ASCII, whatever
                       separators=(",", ":")).encode("ascii")  # the names hold (escapes, surrogates too)
    iv = hmac.new(seal, plain, hashlib.sha256).digest()[:16]
    body = _xor(plain, _keystream(hide, iv, len(plain)))
    return PREFIX + base64.urlsafe_b64encode(iv + body).decode("ascii").rstrip("=")


def read(secret: str | bytes | None, token: str) -> Replay:
    """What ``token`` names, or ``BadToken`` when it is not one this secret made."""
    token = token.strip()
    if not token.startswith(PREFIX) or len(token) > MAX_CHARS:
        raise BadToken("that is not a replay token (they start with bpt1. and come from a course's report)")
    text = token[len(PREFIX):]
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        raise BadToken("that replay token is damaged (it is not base64): copy it whole") from None
    iv, body = raw[:16], raw[16:]
    seal, hide = _keys(secret)
    plain = _xor(body, _keystream(hide, iv, len(body)))
    if len(iv) < 16 or not hmac.compare_digest(hmac.new(seal, plain, hashlib.sha256).digest()[:16], iv):
        raise BadToken("that replay token was not made with this course secret (another secret, no "
                       "secret, or an altered token)")
    try:
        fields = json.loads(plain.decode("ascii"))
    except ValueError:  # UnicodeDecodeError included
        fields = None
    if not (isinstance(fields, list) and len(fields) == 4 and all(isinstance(f, str) for f in fields)):
        raise BadToken("that replay token holds no run")
    return Replay(*fields)
