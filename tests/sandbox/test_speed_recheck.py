"""A call that ran out of time: was it the machine? (issue 44) Practice probes the machine again
and, where it slowed down since the budgets were set, runs the call once more under budgets
scaled to the new speed; a course keeps its budgets; every timeout's sentence says what was
measured. The machine's speed is faked (``slowdown_now``), never read from the wall clock."""
from dataclasses import dataclass, field

from hypothesis import given, strategies as st

from backprop_traps.grader.sandbox import machine_speed, speed_recheck
from backprop_traps.grader.sandbox.channel import CallResult
from backprop_traps.grader.sandbox.limits import NOTABLY_SLOW, Limits
from backprop_traps.grader.sandbox.machine_speed import MAX_SLOWDOWN, calibrated
from backprop_traps.grader.sandbox.speed_recheck import SLOWER_BY, after_timeout, rechecked


@dataclass
class FakeBox:
    """What ``after_timeout`` reads and writes of a Sandbox."""
    limits: Limits
    practice: bool = True
    spent: float = 0.0
    tries: list = field(default_factory=list)


def timed_out(box: FakeBox) -> CallResult:
    """The channel's sentence for a call that ran past ``box``'s budget (channel.py's words)."""
    box.spent += box.limits.call_seconds
    return CallResult(False, kind="timeout", error=(
        f"f() did not finish within {box.limits.call_seconds:g} s ({box.limits.too_slow()})"))


def machine_at(monkeypatch, *speeds):
    """The machine's slowdown at each probe after a timeout, in turn."""
    probes = iter(speeds)
    monkeypatch.setattr(machine_speed, "slowdown_now", lambda: next(probes))


def test_a_machine_that_slowed_under_the_call_runs_it_again_under_rescaled_budgets(monkeypatch):
    """The 6.12 machine's case: budgets 17x, the host's load then grew; the call got 30x."""
    box = FakeBox(calibrated(Limits(), practice=True, factor=17.0), spent=40.0)
    first = timed_out(box)
    machine_at(monkeypatch, 30.0)
    result = after_timeout(box, 40.0, first, lambda: box.tries.append(box.spent) or CallResult(True, value=1))
    assert result.ok and box.tries == [40.0]  # the first try's time was not charged to the code
    assert box.limits.call_seconds == 300.0 and box.limits.total_seconds == 1800.0
    assert box.limits.slowdown == 30.0 and box.limits.slowdown_before == 17.0 and box.limits.scaled


def test_a_machine_as_fast_as_before_keeps_the_timeout_and_says_what_was_measured(monkeypatch):
    box = FakeBox(calibrated(Limits(), practice=True, factor=17.0))
    machine_at(monkeypatch, 18.0)
    result = after_timeout(box, 0.0, timed_out(box), lambda: 1 / 0)  # not run again
    assert result.kind == "timeout" and "within 170 s" in result.error
    assert "already 17x" in result.error and "17x slower" in result.error
    assert "18x right after this call ran out" in result.error, result.error


def test_a_second_timeout_says_both_probes_and_the_third(monkeypatch):
    box = FakeBox(calibrated(Limits(), practice=True, factor=17.0))
    machine_at(monkeypatch, 30.0, 31.0)
    result = after_timeout(box, 0.0, timed_out(box), lambda: timed_out(box))
    assert result.kind == "timeout" and "within 300 s" in result.error
    for said in ("17x slower than a typical laptop before grading", "30x slower when this call first ran out",
                 "31x right after it ran out again"):
        assert said in result.error, result.error


def test_a_loaded_laptop_that_was_fast_at_first_gets_its_budgets_scaled_too(monkeypatch):
    box = FakeBox(calibrated(Limits(), practice=True, factor=1.0))
    machine_at(monkeypatch, 3.0)
    assert after_timeout(box, 0.0, timed_out(box), lambda: CallResult(True)).ok
    assert box.limits.call_seconds == 30.0 and box.limits.slowdown_before == 1.0


def test_a_course_keeps_its_budgets_and_names_the_measurements(monkeypatch):
    box = FakeBox(calibrated(Limits(call_seconds=5), practice=False, factor=1.0), practice=False)
    machine_at(monkeypatch, 30.0)
    result = after_timeout(box, 0.0, timed_out(box), lambda: 1 / 0)
    assert box.limits.call_seconds == 5 and not box.limits.scaled
    assert "typical laptop's speed before grading and 30x slower right after" in result.error
    assert "set by hand" in result.error


def test_budgets_set_by_hand_are_never_rescaled(monkeypatch):
    box = FakeBox(calibrated(Limits(call_seconds=400, fixed=True), practice=True, factor=20.0))
    machine_at(monkeypatch, 40.0)
    result = after_timeout(box, 0.0, timed_out(box), lambda: 1 / 0)
    assert box.limits.call_seconds == 400 and "20x slower" in result.error and "40x right after" in result.error


def test_a_typical_machine_keeps_the_plain_sentence(monkeypatch):
    box = FakeBox(calibrated(Limits(), practice=True, factor=1.0))
    machine_at(monkeypatch, 1.0)
    result = after_timeout(box, 0.0, timed_out(box), lambda: 1 / 0)
    assert result.error.endswith("(an endless loop, or far too slow)")


speeds = st.floats(1.0, MAX_SLOWDOWN)


@given(speeds, speeds, st.booleans(), st.booleans())
def test_a_recheck_never_shrinks_a_budget_and_rescales_only_practice_on_a_slower_machine(before, now, practice, fixed):
    limits = calibrated(Limits(fixed=fixed), practice=practice, factor=before)
    speed_recheck.machine_speed.slowdown_now, real = (lambda: now), machine_speed.slowdown_now
    try:
        after, again = rechecked(limits, practice)
    finally:
        speed_recheck.machine_speed.slowdown_now = real
    assert again == (practice and not fixed and now >= SLOWER_BY * (before if limits.scaled else 1.0))
    assert after.call_seconds >= limits.call_seconds - 0.1 and after.total_seconds >= limits.total_seconds - 0.1
    said = after.too_slow()
    if max(before, now) >= NOTABLY_SLOW:  # a slow machine is named, with what was measured
        assert "an endless loop, or far too slow" != said and "x slower" in said
        assert f"{now:.0f}x" in said or now < NOTABLY_SLOW


def test_a_sandboxed_call_that_ran_out_on_a_machine_slowed_down_runs_again(monkeypatch):
    """Through the real Sandbox: a 1.5 s call under a 0.5 s budget at 2x; the machine is then
    found 60x slow, so the budget becomes 15 s and the call is run again, and passes."""
    from backprop_traps.grader.sandbox.process import Sandbox
    machine_at(monkeypatch, 60.0)
    limits = Limits(call_seconds=0.5, total_seconds=30.0, load_seconds=60.0, slowdown=2.0, scaled=True)
    with Sandbox("import time\ndef slow():\n    time.sleep(1.5)\n    return 7\n", limits, practice=True) as box:
        result = box.call("slow")
        assert result.ok and result.value == 7, result.error
        assert box.limits.call_seconds == 15.0 and box.spent < 15.0


def test_a_sandboxed_endless_loop_on_a_steady_machine_names_both_probes(monkeypatch):
    from backprop_traps.grader.sandbox.process import Sandbox
    machine_at(monkeypatch, 25.0)
    scaled = Limits(call_seconds=1.0, total_seconds=30.0, load_seconds=60.0, slowdown=25.0, scaled=True)
    with Sandbox("def spin():\n    while True:\n        pass\n", scaled, practice=True) as box:
        result = box.call("spin")
    assert result.kind == "timeout" and "within 1 s" in result.error
    assert "already 25x" in result.error and "25x right after this call ran out" in result.error, result.error
