"""What a question is to the grader: its checks, their points, and the traps they name.

A hidden-checks module (``grader/checks/<id>.py``) builds one ``Question`` and registers
checks on it with a decorator; the order of definition is the order of the report::

    QUESTION = Question("routing_trap", "Max pooling must cache where the max came from",
                        traps=[Trap("avg-routing", "...what went wrong and how to fix it...")])

    @QUESTION.check("max-pool forward: values and argmax", points=2)
    def forward_values(ctx):
        out, argmax = ctx.call("maxpool2d_forward", x, 2, 2)
        ctx.expect_array("out", out, expected_out, fn="maxpool2d_forward")

A check passes by returning and fails by raising ``Fail`` (``CheckContext`` helpers raise
it for you), optionally naming a trap id from the question's list.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from backprop_traps.grader.engine.sentences import first_sentence


@dataclass(frozen=True)
class Trap:
    """A known mistake: its id (CONTRACT.md) and what to tell the learner about it.

    The failure report shows the ``symptom`` only (what is wrong, never the fix); the fix comes
    from ``--hint``, one step at a time: the question to ask yourself, the rule, the pointer
    (issue 22). Checks may still put ``explanation`` in their feedback: the engine replaces it
    by the symptom (``backprop_traps.grader.engine.trap_feedback``)."""
    id: str
    explanation: str
    """What went wrong and how to fix it, in plain words, without the solution code."""
    symptom: str = ""
    """One line: what is wrong, as the learner sees it. Default: the explanation's first sentence."""
    hints: tuple[str, ...] = ()
    """Three steps to the fix: the question to ask yourself, the rule, the pointer. Default: built
    from the failing check's hints around the explanation's remaining sentences."""

    @property
    def what_is_wrong(self) -> str:
        return self.symptom or first_sentence(self.explanation)


class Fail(Exception):
    """A check failed; ``feedback`` is one or two sentences for the learner."""

    def __init__(self, feedback: str, trap: str | None = None, settled: bool = False,
                 hints: tuple[str, ...] | None = None, grader_error: bool = False):
        super().__init__(feedback)
        self.feedback = feedback
        self.trap = trap
        self.settled = settled
        """The feedback is the whole story (e.g. a shape off by an axis of length 1): checks that
        diagnose failures further must not give it a trap's name."""
        self.hints = hints
        """Hints that follow this failure rather than the check (e.g. fix the upstream function
        first); None: the check's own, or the trap's."""
        self.located: str | None = None
        """Where the values differ, when the check compared arrays (``CheckContext.locate``)."""
        self.grader_error = grader_error
        """The grader could not check this answer (its own child failed, or this sandbox level
        cannot run what the check needs): reported as the grader's error, never the learner's."""


@dataclass(frozen=True)
class Check:
    """One hidden check of a question."""
    name: str
    """What it checks, in words a learner understands."""
    points: float
    run: Callable
    """``run(ctx)``: returns on success, raises ``Fail`` otherwise."""
    hints: tuple[str, ...] = ()
    """Up to three hints, from a nudge to the key idea; never code."""
    kinks: tuple[str, ...] = ()
    """The question's kinks (``Question.kinks``) this check probes exactly at the boundary,
    with an input built to land on it."""
    memory: tuple[str, ...] = ()
    """The memory paths (``Question.memory_paths``) whose peak this check measures."""


@dataclass
class Question:
    """A question's hidden checks and traps, as registered by its checks module."""
    id: str
    title: str
    traps: list[Trap] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    difficulty: str = "medium"
    """How hard it is for a newcomer: "easy", "medium" or "hard" (shown by `grade list`)."""
    grader_setup: bool = False
    """The solution's setup cell (nbgrader grade_id ``setup``) defines helpers the checks rely
    on, e.g. ``matvec`` that counts multiply-adds: ``grade`` runs the solution's copy of that
    cell in the sandbox right after the learner's code loads, so the grader's helpers replace
    the learner's copies, edited or missing."""
    kinks: dict[str, str] | None = None
    """Every kink, tie or threshold of the question's functions (ReLU at 0, a tied max, a clip
    edge, float16's overflow...), id -> where it lies; ``{}`` for a question with none. ``grade
    validate`` fails a question that does not declare them (None) or whose checks leave one
    unprobed: each needs a check registered with ``kinks=(id,)`` that lands an input on it."""
    memory_paths: tuple[str, ...] = ()
    """The code paths a memory promise covers (e.g. ``("causal=False", "causal=True")``): every
    argument that changes the code path of a function whose peak memory is promised. ``grade
    validate`` fails a question whose checks measure memory without declaring its paths, or
    leave one unmeasured: each needs a check registered with ``memory=(path,)``."""
    measured_calls: int | None = None
    """How many calls of a grading measure memory, when it is not one per declared memory path
    (one call may cover two paths; a second may come only when the first is over budget). A
    question that measures any starts its sandbox as a measuring one, so the measured calls
    need no child of their own (``Sandbox.expect_measured_calls``). Speed only, never a score."""
    services: Callable | None = None
    """``services() -> (helpers_source, {name: function})``: functions that run in the grader,
    not the sandbox, for what must not be counted or decided inside it (e.g. multiply-adds).
    ``helpers_source`` runs after the learner's code and reaches them with
    ``_grader_ask(name, *args)``; checks read the same functions through ``ctx.service``."""
    source_harness: Callable | None = None
    """``source_harness() -> helpers_source``: for what is graded from the learner's source, not
    from objects their code built (maxpool_kernel's CUDA kernels): trusted code run in a second
    child in which none of the learner's code runs (``grader/sandbox/source_child.py``). It gets
    the submission's cells as text; checks call it through ``ctx.harness``."""

    axes: dict[str, tuple[str, ...]] | None = None
    """Names for the axes of an output, by its name, in the learner's terms (e.g. ``{"dx":
    ("step t", "row n", "feature")}``): feedback says where values differ along them ("only
    where step t = 0"); default row and column."""
    shrink: dict[str, dict[str, list[tuple[int, int]]]] | None = None
    """The sizes of each function's input that can be cut from the front and leave a valid input
    (a prefix of a sequence, some rows of a batch), by function: size -> [(argument, axis)...];
    a failure then shows the smallest input that still fails (grader/engine/shrink.py)."""
    dtypes: dict[str, dict[str, str]] | None = None
    """The contract's dtype of each output that is not float64 (docs/questions/<id>.md), by
    function and output name, e.g. ``{"mixed_precision_step": {"master": "float32", "weight16":
    "float16"}}``; every other float output is float64 (the contract's convention). Dtype
    diagnoses read it: a float32 answer is "narrower than the contract" only where the
    contract says float64."""

    def contract_dtype(self, fn: str, name: str) -> str:
        """The dtype the contract gives output ``name`` of ``fn`` ("float64" unless declared);
        ``name`` may carry an index (``clipped[0]``) or a description after a space."""
        declared = (self.dtypes or {}).get(fn) or {}
        for key in (name, name.split("[", 1)[0], name.split(" ", 1)[0]):
            if key in declared:
                return declared[key]
        return "float64"

    def check(self, name: str, points: float, hints: tuple[str, ...] = (), kinks: tuple[str, ...] = (),
              memory: tuple[str, ...] = ()):
        """Decorator: register ``run(ctx)`` as a check worth ``points``; ``kinks`` and ``memory``
        say which declared kinks it probes and which memory paths it measures."""
        def register(run: Callable) -> Callable:
            self.checks.append(Check(name, float(points), run, tuple(hints), tuple(kinks), tuple(memory)))
            return run
        return register

    @property
    def max_score(self) -> float:
        return sum(c.points for c in self.checks)

    @property
    def expected_measured_calls(self) -> int:
        if self.measured_calls is not None:
            return self.measured_calls
        return sum(len(c.memory) for c in self.checks)

    def trap(self, trap_id: str) -> Trap:
        for t in self.traps:
            if t.id == trap_id:
                return t
        raise KeyError(f"{self.id} has no trap {trap_id!r}")
