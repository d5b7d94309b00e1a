"""Options shared by the commands that grade: the sandbox limits, declared once."""
import functools

import click

from backprop_traps.grader.sandbox.limits import Limits

_DEFAULTS = Limits()


def limit_options(command):
    """Add --call-timeout, --total-timeout and --memory-mb; the command gets ``limits``."""
    @click.option("--call-timeout", type=float, default=_DEFAULTS.call_seconds, show_default=True,
                  help="Seconds one call into the submitted code may take.")
    @click.option("--total-timeout", type=float, default=_DEFAULTS.total_seconds, show_default=True,
                  help="Seconds all calls of one submission may take together.")
    @click.option("--memory-mb", type=int, default=_DEFAULTS.memory_mb, show_default=True,
                  help="Memory cap of the process running the submitted code.")
    @functools.wraps(command)
    def with_limits(*args, call_timeout, total_timeout, memory_mb, **kwargs):
        limits = Limits(call_seconds=call_timeout, total_seconds=total_timeout, memory_mb=memory_mb)
        return command(*args, limits=limits, **kwargs)
    return with_limits
