"""The ``grade`` console script: a learner's plain ``grade FILE`` starts its sandbox booting
before click and the CLI are even imported, then the CLI runs as always.

The child's boot (bubblewrap, Python, numpy) is most of what a learner waits for, and it
depends only on the limits, the layers and the folders it masks; for ``grade FILE`` with no
option that changes those, they are known from the command line alone. Anything else (another
option, a subcommand, a name that is not a file) starts nothing here, and the CLI starts its
sandbox as it always did (``cli._start_sandbox_early``). A sandbox started here is only ever
taken by the grading it fits (``warm.take`` compares ``Sandbox.launch_key``); one not taken is
closed at exit. Speed only: whatever happens here, the CLI decides and reports.

A ``grade`` that has said everything also ends without tearing its interpreter down module by
module (``_end_now``): time spent freeing what the process is about to give back whole.
"""
from __future__ import annotations

import atexit
import os
import sys

_SAFE_FLAGS = ("--json", "--hint")
"""Options that change nothing a sandbox is launched with."""
_SAFE_VALUED = ("--seed", "--question", "-q")


def _plain_grading(argv: list[str]) -> str | None:
    """The submission of ``grade FILE [--json] [--hint] [--seed N] [-q ID]``, else None."""
    files, rest = [], list(argv)
    while rest:
        arg = rest.pop(0)
        if arg in _SAFE_FLAGS:
            continue
        if arg in _SAFE_VALUED:
            if not rest:
                return None
            rest.pop(0)
            continue
        if arg.startswith("-"):
            return None  # a limit, a replay, a questions folder, --help, ...: the CLI's own start
        files.append(arg)
    if not files or not files[0].endswith((".ipynb", ".py")) or not os.path.isfile(files[0]):
        return None
    return files[0]


def _start_early(argv: list[str]) -> None:
    path = _plain_grading(argv)
    if path is None:
        return
    try:
        from backprop_traps.grader.engine.draws import is_practice
        from backprop_traps.grader.loading.questions import questions_root
        from backprop_traps.grader.sandbox import warm
        from backprop_traps.grader.sandbox.limits import Limits
        from backprop_traps.grader.sandbox.visibility import submission_hides
        warm.prepare(Limits(), submission_hides(questions_root(None), path), is_practice(None, None))
    except Exception:  # noqa: BLE001 (speed only: the CLI starts its own sandbox)
        pass


_exit_status: list[int] = []  # the status the CLI asked for, once it has asked


def _end_now() -> None:
    """The last exit hook (registered first): every other hook has run and every non-daemon
    thread was joined, so all that is left is the teardown; skip it. Only for an exit the CLI
    asked for with a status (an uncaught exception ends the usual way), and only once both
    streams are flushed (a closed pipe is left to the interpreter to report)."""
    if not _exit_status:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 (the interpreter's own exit reports it)
        return
    os._exit(_exit_status[0])


def main() -> None:
    atexit.register(_end_now)
    _start_early(sys.argv[1:])
    from backprop_traps.grader.cli import main as cli
    try:
        cli()
    except SystemExit as stop:
        code = stop.code
        _exit_status.append(code if isinstance(code, int) else 0 if code is None else 1)
        raise
