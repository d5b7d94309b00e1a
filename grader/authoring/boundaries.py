"""``grade validate``'s boundary and memory-path rules (issue 24, classes 1 and 2): a question
cannot ship without a boundary probe for each kink and a memory check on each path of a memory
promise.

A question declares its kinks (``Question.kinks``, ``{}`` when it has none) and the paths its
memory promise covers (``Question.memory_paths``); each check says which kinks it probes and
which paths it measures (``@QUESTION.check(..., kinks=(...), memory=(...))``). What is measured
is also observed: the checks run once on the reference, and a check that asks for a memory
measurement must declare its path, while one that declares a path must measure.
"""
from __future__ import annotations

import re

from backprop_traps.grader.authoring.findings import FAIL, OK
from backprop_traps.grader.authoring.in_process import InProcessCaller, run_checks

KINK_MAKERS = re.compile(r"np\.(maximum|minimum|clip|where|argmax|argmin|round|rint|floor|ceil|sign|abs)\b"
                         r"|\b(max|min)\(|[<>]=?\s*0\b")
"""Source patterns that often make a kink, tie or threshold: named as a pointer when a question
declares none."""


class _MeasureRecorder(InProcessCaller):
    """An in-process caller that notes whether any call asked for a memory measurement."""

    def __init__(self, namespace):
        super().__init__(namespace)
        self.measured = False

    def call(self, fn, *args, measure_memory: bool = False, **how):
        self.measured = self.measured or measure_memory
        return super().call(fn, *args, measure_memory=measure_memory, **how)


def measuring_checks(question, ref, seed: int) -> set[str]:
    """The names of the checks that ask for a memory measurement, run on the reference."""
    found = set()
    for check in question.checks:
        caller = _MeasureRecorder(ref)
        run_checks(question, caller, ref, seed, only={check.name})
        if caller.measured:
            found.add(check.name)
    return found


def check_boundaries(report, question, ref, seed: int, solution_code: str = "") -> None:
    """The kinks and memory paths a question declares, each probed or measured by a check."""
    problems = []
    kinks = question.kinks
    if kinks is None:
        makers = sorted({m.group(0).strip() for m in KINK_MAKERS.finditer(solution_code)})[:6]
        problems.append("the question declares no kinks: list every kink, tie or threshold of its "
                        "functions in Question(..., kinks={id: where}), or kinks={} if there is none"
                        + (f" (its solution uses {', '.join(makers)})" if makers else ""))
        kinks = {}
    probed = {k for c in question.checks for k in c.kinks}
    problems += [f"kink '{k}' ({where}) has no boundary probe: register a check with kinks=('{k}',) "
                 "whose input lands exactly on it" for k, where in kinks.items() if k not in probed]
    problems += [f"check '{c.name}' probes kink '{k}', which the question does not declare"
                 for c in question.checks for k in c.kinks if k not in kinks]
    paths = set(question.memory_paths)
    covered = {p for c in question.checks for p in c.memory}
    measuring = measuring_checks(question, ref, seed)
    if measuring and not paths:
        problems.append(f"checks measure memory ({', '.join(sorted(measuring))}) but the question "
                        "declares no memory_paths: name every argument value that changes the code path "
                        "of a function whose memory is promised, and measure each")
    problems += [f"memory path '{p}' is never measured: register a memory check with memory=('{p}',)"
                 for p in question.memory_paths if p not in covered]
    problems += [f"check '{c.name}' measures memory but declares no path (memory=...)"
                 for c in question.checks if c.name in measuring and not c.memory]
    problems += [f"check '{c.name}' declares memory path(s) {', '.join(c.memory)} but measures no memory"
                 for c in question.checks if c.memory and c.name not in measuring]
    problems += [f"check '{c.name}' measures path '{p}', which the question does not declare"
                 for c in question.checks for p in c.memory if p not in paths]
    if problems:
        report.add(FAIL, "kinks and memory paths", problems)
    else:
        what = (f"{len(kinks)} kink(s) each probed at the boundary" if kinks else
                "the question declares that its functions have no kink, tie or threshold")
        what += f", {len(paths)} memory path(s) each measured" if paths else ""
        report.add(OK, what)

