"""The child's limits, with their defaults (documented in the README's security section)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    call_seconds: float = 10.0
    """Wall-clock seconds one call (or loading the submission) may take."""
    total_seconds: float = 60.0
    """Wall-clock seconds for all the calls of one submission together."""
    memory_mb: int = 4096
    """Address-space cap of the child (RLIMIT_AS); a bigger allocation raises MemoryError."""
    output_kb: int = 64
    """What the learner prints is kept up to this size; the rest is counted and dropped."""
    file_mb: int = 16
    """Largest file the child may write (RLIMIT_FSIZE), inside its own temp dir only."""
    message_mb: int = 256
    """Largest answer the child may send back; a bigger one is refused, not read."""
    tmp_mb: int = 64
    """Size of the sandbox's private /tmp (a tmpfs, counted in its memory where a cgroup
    counts it)."""
    max_processes: int = 64
    """Processes and threads the whole sandbox may hold at once (its cgroup's pids.max)."""
