"""Helpers of the red-team suite's class 10 (the terminal report): what a learner's text may
not put in front of a reader, and the `grade` CLI run on a real pseudo-terminal. Re-exported
by redteam_kit.py."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

# -- class 10: the terminal report --------------------------------------------------------------------
FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069]")
"""The list of round 2 (kept for its importers); ``raw_format_characters`` is the rule now."""
INVISIBLE = frozenset({"Cc", "Cf", "Zl", "Zp", "Cn", "Co", "Cs"})
"""Issue 35, class 4: no character of these Unicode categories may reach a reader raw."""


def raw_format_characters(text: str) -> list[str]:
    """The code points of ``text`` in ``INVISIBLE`` categories, but the line breaks and tabs
    a report is laid out with (judged with unicodedata here, not with the grader's filter)."""
    import unicodedata
    return sorted({f"U+{ord(c):04X}" for c in text
                   if c not in "\n\t" and unicodedata.category(c) in INVISIBLE})


def assert_clean_report(text: str, checks: int) -> None:
    """No raw control or format character, and exactly one PASS/FAIL line per real check."""
    bad = raw_format_characters(text)
    assert not bad, f"raw control characters in the report: {bad}"
    marks = [m.group(2).strip() for m in re.finditer(r"^\s*(PASS|FAIL|BUG)\s+\S+/\S+\s+(.*)$", text, re.M)]
    assert len(marks) == checks and len(set(marks)) == len(marks), f"forged check lines: {marks}"
    assert len(re.findall(r"^\s*Score:", text, re.M)) <= 1, "a forged Score line"


def on_terminal(args: list[str], cwd: Path, timeout: float = 90.0) -> str:
    """Run the `grade` CLI on a real pseudo-terminal (colours on, as a learner sees it; click
    strips CSI sequences itself when it is not writing to a terminal, which would hide a leak),
    raw mode (no \\n -> \\r\\n), and return what it wrote, the kit's own colour codes removed."""
    import pty
    import select
    import tty
    master, slave = pty.openpty()
    tty.setraw(slave)
    proc = subprocess.Popen([sys.executable, "-c", "from backprop_traps.grader.cli import main; main()", *args],
                            stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, cwd=cwd,
                            env={**os.environ, "TERM": "xterm", "COLUMNS": "120"})
    os.close(slave)
    chunks, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                data = os.read(master, 1 << 16)
            except OSError:  # EIO: the other side is closed
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    proc.kill()
    proc.wait()
    os.close(master)
    text = b"".join(chunks).decode("utf-8", "replace")
    return re.sub("\x1b\\[[0-9;]*m", "", text)  # the report's own colours (SGR), nothing else


