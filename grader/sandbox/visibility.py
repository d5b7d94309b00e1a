"""What learner code may read, for the layers that work by path: the kit's entries to mask
(bubblewrap) or leave out (Landlock), and the read-only trees of the Landlock fallback."""
from __future__ import annotations

import functools
import os
import site
from pathlib import Path

from backprop_traps.grader.sandbox import bwrap

_ABOVE = Path(__file__).resolve().parents[2]
KIT_ROOT = _ABOVE if (_ABOVE / "pyproject.toml").is_file() else None
"""The clone the kit runs from, or None when installed (then ``_ABOVE`` is site-packages)."""


def submission_hides(root, submission) -> list[Path]:
    """What a submission's sandbox masks besides the kit: the questions' folder and its own."""
    return [Path(root), Path(submission).resolve().parent]


def hidden_paths(extra: list[Path]) -> list[str]:
    """What the child must not read: the kit's folders wherever they are installed, plus
    ``extra`` (an instructor's own questions folder, the submission's folder)."""
    hidden = ([str(KIT_ROOT)] if KIT_ROOT else []) + [str(p) for p in extra]
    for folder in site.getsitepackages() + [site.getusersitepackages()]:
        base = Path(folder)
        if not base.is_dir():
            continue
        for entry in base.iterdir():
            name = entry.name.lower()  # the package, its .pth and dist-info, an editable finder;
            if "backprop_traps" in name or "backprop-traps" in name:  # not another project's `kernels`
                hidden.append(str(entry))
    return hidden


DEFERRED_STARTUP = {"_numba_cuda_redirector.pth": "numba"}
"""Start-up files (.pth) whose code the child runs only when learner code first imports the
module named: numba-cuda's redirector costs about 18 ms of every child's start (it loads
importlib.resources) and acts only on imports of ``numba.cuda``. Inside bubblewrap the file is
masked and the worker runs its import lines at that first import (``worker.defer_startup``)."""


def deferred_startup() -> list[tuple[str, str, str]]:
    """``(path, trigger module, its import lines)`` of each deferred start-up file here."""
    found = []
    for folder in site.getsitepackages() + [site.getusersitepackages()]:
        for name, trigger in DEFERRED_STARTUP.items():
            path = os.path.join(folder, name)
            try:
                with open(path, encoding="utf-8") as pth:
                    code = "".join(line for line in pth if line.startswith(("import ", "import\t")))
            except OSError:
                continue
            if code:
                found.append((path, trigger, code))
    return found


def startup_hooks() -> list[str]:
    """Start-up files (.pth) of the installation that only run code at every interpreter's
    start (each of their lines an import line): bubblewrap masks them, and the child runs them
    never. Learner code needs none of them (the one it may, numba-cuda's redirector, is
    deferred instead), and each is paid by every sandbox's boot: a certificate hook some
    machines install imports certifi, 25 ms of every Python start. Left alone: .pth files that
    add folders to the path, those that lay out namespace packages (``*-nspkg.pth``), the kit's
    own (masked anyway) and the deferred ones."""
    return list(_startup_hooks())


@functools.lru_cache(maxsize=1)
def _startup_hooks() -> tuple[str, ...]:
    found = []
    for folder in site.getsitepackages() + [site.getusersitepackages()]:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            lower = name.lower()
            if (not lower.endswith(".pth") or lower.endswith("-nspkg.pth") or name in DEFERRED_STARTUP
                    or "backprop_traps" in lower or "backprop-traps" in lower):
                continue
            path = os.path.join(folder, name)
            try:
                with open(path, encoding="utf-8") as pth:
                    lines = [line.strip() for line in pth.read(1 << 16).splitlines()]
            except (OSError, UnicodeDecodeError):
                continue
            code = [line for line in lines if line and not line.startswith("#")]
            if code and all(line.startswith(("import ", "import\t")) for line in code):
                found.append(path)
    return tuple(found)


def readable_paths() -> list[str]:
    """What learner code legitimately reads: Python, its packages, system libraries."""
    paths = set(bwrap.python_roots())  # never sys.path as such: it may hold the working folder
    paths.update(["/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/local/lib", "/etc/ld.so.cache",
                  "/etc/localtime", "/usr/share/zoneinfo",
                  *bwrap.SYSTEM_INFO,  # the machine's description, as inside bubblewrap
                  "/dev/urandom"])
    return sorted(paths)


@functools.lru_cache(maxsize=32)
def _read_only_rules(hidden: tuple[str, ...]) -> list[str]:
    """The read-only Landlock rules: listing site-packages entry by entry costs a few hundred
    ms, and a batch starts hundreds of sandboxes with the same hidden paths."""
    from backprop_traps.grader.sandbox import landlock
    return [p for r in readable_paths() for p in landlock.allowed_entries(r, list(hidden))]
