"""Options shared by the commands: the sandbox limits, declared once, and the bounded numeric
types every numeric option uses (a number a command cannot use is refused by click with one
sentence, before the command runs: `--minutes 1e12`, `inf`, `nan`, a negative seed)."""
import functools
import math

import click

from backprop_traps.grader.sandbox.limits import Limits

_DEFAULTS = Limits()
SEED = click.IntRange(0, 2**64 - 1)
"""A seed of the hidden inputs: numpy takes non-negative seeds; 64 bits is what a draw gives."""


class Finite(click.FloatRange):
    """``click.FloatRange`` that also refuses NaN (which compares false with both bounds, so a
    range alone lets it through); infinities fall outside every bound given."""

    name = "finite float range"

    def convert(self, value, param, ctx):
        found = super().convert(value, param, ctx)
        if not math.isfinite(found):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return found


MINUTES = Finite(0.05, 24 * 60.0)
"""A mock's clock: three seconds to a day (grader/loading/persisted.py's ``MINUTES_MAX``)."""


def limit_options(command):
    """Add --call-timeout, --total-timeout, --memory-mb and --code-timeout; the command gets
    ``limits``. Time budgets given on the command line are ``fixed``: a learner's practice
    scales only the defaults to a slow machine (sandbox/machine_speed.py)."""
    @click.option("--call-timeout", type=Finite(0.05, 3600.0), default=_DEFAULTS.call_seconds, show_default=True,
                  help="Seconds one call into the submitted code may take (your own practice "
                       "scales the default to a slow machine; a value given here is kept).")
    @click.option("--total-timeout", type=Finite(0.05, 86400.0), default=_DEFAULTS.total_seconds,
                  show_default=True, help="Seconds all calls of one submission may take together "
                                          "(scaled like --call-timeout).")
    @click.option("--memory-mb", type=click.IntRange(64, 1 << 20), default=_DEFAULTS.memory_mb, show_default=True,
                  help="Memory cap of the process running the submitted code.")
    @click.option("--code-timeout", type=Finite(0.05, 3600.0), default=None,
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
