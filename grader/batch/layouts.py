"""Finding a class's submissions, and whose each one is, from where it lies.

SOURCE is a folder, a glob, or one file. Under its base folder:
- ``<student>/<files>`` (any depth below the student's folder): the student is the first
  folder; nbgrader's course root (``submitted/<student>/<assignment>/<notebook>``) is
  recognised by its ``submitted/`` folder and read the same way;
- ``<student>_<question>.ipynb`` (or ``.py``) directly in the base folder: the known
  question id is matched at the end of the name (ids contain underscores, so the longest
  known id that ends the name wins); a name that ends with none is a student of its own.

The question comes from the file name when the name says it (``<question>.py``,
``01_<question>.ipynb``, the flat form), otherwise from the file itself, as for `grade`.
Tool litter is skipped (``.ipynb_checkpoints``, ``__pycache__``, ``.git``, macOS's
``__MACOSX`` and ``._*`` files); every other name is graded, hidden ones included.

Only regular files below SOURCE are read. A symbolic link anywhere on the path below the
base folder (a link could point at the kit's own solutions), a FIFO (reading it blocks), a
device, a socket, a file over ``MAX_SUBMISSION_BYTES`` (a sparse terabyte), one that cannot
be read or that vanished: each becomes that submission's result with the reason, found with
``lstat`` before anything opens it; the batch goes on.
"""
from __future__ import annotations

import glob
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

SUFFIXES = (".ipynb", ".py")
_NUMBERED = re.compile(r"^\d+_(.+)$")
_MAGIC = re.compile(r"[*?\[]")
MAX_SUBMISSION_BYTES = 16 * 1024 * 1024
"""A submission larger than this is not read (a notebook with its outputs is well below)."""


@dataclass(frozen=True)
class Job:
    """One submission to grade."""
    student: str
    """Whose it is: a folder name or the flat name's first part, exactly as on disk."""
    path: Path
    """The file, as found (relative to the current folder when SOURCE was)."""
    rel: str
    """Its path inside the layout's base folder: names its result, tells it apart."""
    question: str | None = None
    """The question, when the layout's file name says it; else the file says."""
    error: str | None = None
    """Why it cannot be graded at all, found before grading (a symbolic link)."""

    @property
    def assignment(self) -> str:
        """The folders between the student's and the file: nbgrader's assignment id in
        ``submitted/<student>/<assignment>/``, "" where the file lies in the student's folder
        or the flat layout (a part of each course seed: variants.student_seed)."""
        parts = self.rel.split("/")
        return "/".join(parts[1:-1])


class LayoutError(ValueError):
    """SOURCE names nothing usable; the message is a sentence for the instructor."""


def find_jobs(source: str | os.PathLike, questions: list[str],
              exclude: Path | None = None) -> list[Job]:
    """Every submission under ``source``, sorted by student then path.

    ``questions`` are the known question ids; ``exclude`` is a folder never to look into
    (the output folder, when it lies inside SOURCE)."""
    source = str(source)
    excluded = exclude.resolve() if exclude is not None else None
    if os.path.isdir(source):
        base = Path(source)
        if (base / "submitted").is_dir():
            base = base / "submitted"  # an nbgrader course root
        files = _walk(base, excluded)
    elif os.path.isfile(source) or os.path.islink(source):
        base, files = Path(source).parent, [Path(source)]
    elif _MAGIC.search(source):
        base = _glob_base(source)
        files = []
        for match in sorted(glob.glob(source, recursive=True)):
            path = Path(match)
            if path.is_dir() and not path.is_symlink():
                files.extend(_walk(path, excluded))
            elif path.suffix in SUFFIXES and not _skipped(path.relative_to(base).parts):
                files.append(path)
    else:
        raise LayoutError(f"{source} is neither a folder, a file, nor a glob that matches anything")
    base = _submitted_folder(base)
    jobs = {_job(base, path, questions) for path in files}
    return sorted(jobs, key=lambda j: (j.student, j.rel))


_NBGRADER_COURSE = ("source", "release", "autograded", "feedback", "gradebook.db", "nbgrader_config.py")
"""What lies beside ``submitted/`` in an nbgrader course root (any one is enough)."""


def _submitted_folder(base: Path) -> Path:
    """nbgrader's ``submitted/`` when ``base`` is one student's folder in it, or one of their
    assignment folders (``submitted`` in a course root), else ``base`` itself."""
    absolute = Path(os.path.abspath(base))
    for above in list(absolute.parents)[:2]:
        if above.name == "submitted" and any((above.parent / n).exists() for n in _NBGRADER_COURSE):
            return above
    return base


def _walk(folder: Path, excluded: Path | None) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):  # never follows linked folders
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not _skipped((d,))
                             and (excluded is None or (here / d).resolve() != excluded))
        found.extend(here / f for f in sorted(filenames)
                     if Path(f).suffix in SUFFIXES and not _skipped((f,)))
    return found


_LITTER = frozenset({".ipynb_checkpoints", "__pycache__", ".git", ".hg", ".svn", "__MACOSX"})


def _skipped(parts) -> bool:
    return any(p in _LITTER or p.startswith("._") for p in parts)


def _glob_base(pattern: str) -> Path:
    """The folder a glob's matches are relative to: its parts before the first wildcard."""
    parts = Path(pattern).parts
    fixed = []
    for part in parts[:-1]:
        if _MAGIC.search(part):
            break
        fixed.append(part)
    return Path(*fixed) if fixed else Path(".")


def _job(base: Path, path: Path, questions: list[str]) -> Job:
    base, found = Path(os.path.abspath(base)), path  # abspath: no link is resolved
    path = Path(os.path.abspath(path))
    try:
        rel_parts = path.relative_to(base).parts
    except ValueError:
        rel_parts = (path.name,)
    rel = "/".join(rel_parts)
    if len(rel_parts) > 1:
        student, question = rel_parts[0], question_in_name(path.stem, questions)
    else:
        student, question = split_flat_name(path.stem, questions)
    return Job(student=student, path=found, rel=rel, question=question, error=unreadable(base, path, rel))


def unreadable(base: Path, path: Path, rel: str) -> str | None:
    """Why ``path`` must not be read, or None: see the module's docstring."""
    try:
        parts = path.relative_to(base).parts
    except ValueError:
        parts = (path.name,)
        base = path.parent
    here = base
    try:
        for i, part in enumerate(parts):
            here = here / part
            info = os.lstat(here)
            if stat.S_ISLNK(info.st_mode):
                what = "is a symbolic link" if i == len(parts) - 1 else f"lies under a symbolic link ({part})"
                return f"{rel} {what}; submissions must be plain files (links are not followed)"
    except FileNotFoundError:
        return f"{rel} vanished before it could be read"
    except OSError as e:
        return f"{rel} cannot be examined ({e.strerror or e})"
    if not stat.S_ISREG(info.st_mode):
        kind = ("a FIFO" if stat.S_ISFIFO(info.st_mode) else "a device" if stat.S_ISCHR(info.st_mode)
                or stat.S_ISBLK(info.st_mode) else "a socket" if stat.S_ISSOCK(info.st_mode) else "not a file")
        return f"{rel} is {kind}, not a regular file: it was not read"
    if info.st_size > MAX_SUBMISSION_BYTES:
        return (f"{rel} is {info.st_size / 1e6:,.0f} MB, over the {MAX_SUBMISSION_BYTES // (1024 * 1024)} MB "
                "a submission may be: it was not read")
    if not os.access(here, os.R_OK):
        return f"{rel} cannot be read (permission denied)"
    return None


def question_in_name(stem: str, questions: list[str]) -> str | None:
    """``routing_trap`` or ``01_routing_trap`` names its question; anything else does not."""
    numbered = _NUMBERED.match(stem)
    for name in (stem, numbered.group(1) if numbered else None):
        if name in questions:
            return name
    return None


def split_flat_name(stem: str, questions: list[str]) -> tuple[str, str | None]:
    """``alice_smith_routing_trap`` -> ("alice_smith", "routing_trap"): the longest known
    question id that ends the name, after an underscore; else the whole name is the student."""
    for qid in sorted(questions, key=len, reverse=True):
        if stem.endswith("_" + qid) and len(stem) > len(qid) + 1:
            return stem[: -len(qid) - 1], qid
    return stem, None


def submitted_at(path: Path) -> str | None:
    """When the file was handed in, as ISO 8601 UTC: nbgrader's ``timestamp.txt`` in its
    assignment folder (what ``nbgrader collect`` keeps), else the file's modification time."""
    from datetime import datetime, timezone
    from backprop_traps.grader.loading import bounded
    for folder in list(Path(path).parents)[:2]:  # <assignment>/ or <student>/
        try:  # the student's folder: the one bounded way (no link, no FIFO, 200 bytes at most)
            return parse_time(bounded.read_text(folder / "timestamp.txt", 200).strip()).isoformat()
        except (OSError, ValueError):
            pass
    try:
        return datetime.fromtimestamp(os.lstat(path).st_mtime, timezone.utc).isoformat()
    except OSError:
        return None


def parse_time(text: str):
    """A date and time as nbgrader writes it ("2024-03-01 17:00:00.000000 UTC") or ISO 8601;
    without a zone it is UTC."""
    from datetime import datetime, timezone
    text = text.strip()
    if text.endswith(" UTC"):
        text = text[:-4]
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        try:  # nbgrader's other zones ("... -0800", "... PST"): dateutil, which nbgrader brings
            import warnings
            from dateutil import parser
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # an unknown zone name: read as UTC, as documented
                value = parser.parse(text)
        except (ImportError, ValueError, OverflowError) as e:
            raise ValueError(f"not a date and time: {text!r}") from e
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)