"""A learner's first try trains training_symptoms' runs on more than one core (issue 47).

In practice the first grading with a seed other than the default (whose runs ship with the kit:
shipped.py) trains every run the diagnosis checks read (benchmarks/training_runs.py), one after
the other, while the learner waits; later tries read them from the practice cache
(engine/practice_cache.py). The runs do not depend on the learner, so here they
are trained side by side: helper processes (this kit's own code in this Python: no learner code
anywhere near them) each train a share and keep it in the practice cache, while this process
trains its own. Then it takes the helpers' shares from the far end: a run a helper has kept is
read from the cache the bounded, schema-checked way any later try reads it; one not kept yet is
trained here (at worst a run is trained twice, and both give the same bits). The helpers are
stopped once every run is in hand. Whatever goes wrong with a helper (it cannot start, fails,
writes nothing) leaves its runs to this process, as before.

Only a learner's own practice comes here, with the cache on: a course never reads the cache,
and its cores are busy with other submissions (``grade batch -j``).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HELPERS_MAX = 3
"""At most this many helpers, on a machine with more cores than that."""
ENOUGH = 4
"""Fewer runs than this to train are trained here alone (a helper's start-up costs a few runs)."""
_DONE: set = set()


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def train_all(seed: int, pairs: list[tuple[str, int]]) -> None:
    """Every run in ``pairs`` (cause, index) of ``seed`` trained and kept in the practice cache and
    in ``runs.trace``'s memory, sharing the work with helpers where that pays."""
    from backprop_traps.grader.checks.training_symptoms import runs
    from backprop_traps.grader.engine import practice_cache
    if (seed, tuple(pairs)) in _DONE:  # every check asks; one grading (or a batch's) trains once
        return
    _DONE.add((seed, tuple(pairs)))
    missing = [p for p in pairs if not runs.is_kept(seed, *p)]
    where = _writable(practice_cache.folder())
    helpers = min(HELPERS_MAX, cores() - 1) if where is not None else 0
    if len(missing) < ENOUGH or helpers < 1:
        for cause, index in missing:
            runs.trace(seed, cause, index, practice=True)
        return
    missing.sort(key=lambda p: runs.COST.get(p[0], 1.0), reverse=True)  # a fair deal of the dear ones
    shares = [missing[k::helpers + 1] for k in range(helpers + 1)]
    started = [_start(seed, share, where) for share in shares[1:]]
    try:
        for cause, index in shares[0]:
            runs.trace(seed, cause, index, practice=True)
        for share in shares[1:]:
            for cause, index in reversed(share):  # the helper works from the front
                runs.trace(seed, cause, index, practice=True)
    finally:
        for proc in started:
            _stop(proc)


def _writable(folder: Path | None) -> Path | None:
    """The cache folder as an absolute path, made if need be, when this process may write there
    (else a helper's runs would be lost, and trained again here); None otherwise."""
    if folder is None:
        return None
    try:
        folder = folder.absolute()  # a relative folder names the same place for a helper (cwd /)
        folder.mkdir(parents=True, exist_ok=True)
        return folder if os.access(folder, os.W_OK | os.X_OK) else None
    except OSError:
        return None


def _start(seed: int, share: list[tuple[str, int]], where: Path) -> subprocess.Popen | None:
    from backprop_traps.grader.engine import practice_cache
    import backprop_traps
    # the kit that runs here, first on the path (an editable clone, or one run by PYTHONPATH)
    package_root = str(Path(backprop_traps.__file__).resolve().parents[1])
    path = [package_root] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), **{practice_cache.ENV: str(where)})
    safe_path = ["-P"] if sys.version_info >= (3, 11) else []  # and "/", its working folder, not on it
    argv = [sys.executable, *safe_path, "-m", __name__, str(seed)] + [f"{cause}:{index}" for cause, index in share]
    try:
        return subprocess.Popen(argv, env=env, cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        return None


def _stop(proc: subprocess.Popen | None) -> None:
    if proc is None:
        return
    proc.kill()  # nothing happens to one that has ended
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def main(argv: list[str]) -> int:
    """A helper: ``SEED CAUSE:INDEX ...``, each run trained and kept in the practice cache."""
    from backprop_traps.grader.checks.training_symptoms import runs
    seed = int(argv[0])
    for item in argv[1:]:
        cause, _, index = item.rpartition(":")
        if cause in runs.CAUSES:
            runs.trace(seed, cause, int(index), practice=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
