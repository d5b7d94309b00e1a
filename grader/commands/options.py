"""Options shared by the commands that grade: the sandbox limits, declared once."""
import functools

import click

from backprop_traps.grader.sandbox.limits import Limits

_DEFAULTS = Limits()


def limit_options(command):
    """Add --call-timeout, --total-timeout, --memory-mb and --code-timeout; the command gets
    ``limits``. Time budgets given on the command line are ``fixed``: a learner's practice
    scales only the defaults to a slow machine (sandbox/machine_speed.py)."""
    @click.option("--call-timeout", type=float, default=_DEFAULTS.call_seconds, show_default=True,
                  help="Seconds one call into the submitted code may take (your own practice "
                       "scales the default to a slow machine; a value given here is kept).")
    @click.option("--total-timeout", type=float, default=_DEFAULTS.total_seconds, show_default=True,
                  help="Seconds all calls of one submission may take together (scaled like "
                       "--call-timeout).")
    @click.option("--memory-mb", type=int, default=_DEFAULTS.memory_mb, show_default=True,
                  help="Memory cap of the process running the submitted code.")
    @click.option("--code-timeout", type=float, default=None,
                  help="Seconds the submitted code itself may take to load, once the libraries it "
                       "imports are in (default: the whole load budget; `grade batch`: 5).")
    @functools.wraps(command)
    def with_limits(*args, call_timeout, total_timeout, memory_mb, code_timeout, **kwargs):
        limits = Limits(call_seconds=call_timeout, total_seconds=total_timeout, memory_mb=memory_mb,
                        code_seconds=code_timeout, fixed=_set_by_hand("call_timeout", "total_timeout",
                                                                      "code_timeout"))
        return command(*args, limits=limits, **kwargs)
    return with_limits


def _set_by_hand(*names: str) -> bool:
    """Whether any of these options was given (not left at its default)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return False
    return any(ctx.get_parameter_source(name) not in (None, click.core.ParameterSource.DEFAULT)
               for name in names)
