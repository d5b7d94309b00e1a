"""A slow machine is a user too (issue 44): a learner's practice scales its time budgets to the
machine's measured speed, a course keeps the instructor's, and a timeout's sentence names a slow
machine instead of blaming the code alone. Speeds come from a fake clock, never the wall clock."""
import itertools

from click.testing import CliRunner
from hypothesis import given, strategies as st

from backprop_traps.grader.sandbox import machine_speed
from backprop_traps.grader.sandbox.limits import Limits
from backprop_traps.grader.sandbox.machine_speed import (MAX_SLOWDOWN, TYPICAL_SECONDS, calibrated,
                                                         probe_seconds, slowdown_of)


def stepping_clock(*durations):
    """Each round reads the clock twice; round i takes ``durations[i]`` seconds."""
    readings, now = [], 0.0
    for d in durations:
        readings += [now, now + d]
        now += d + 1.0
    it = iter(readings)
    return lambda: next(it)


def test_the_probe_takes_the_best_round():
    assert abs(probe_seconds(stepping_clock(0.9, 0.3, 0.6), rounds=3, loops=10) - 0.3) < 1e-9


def test_an_emulated_machine_gets_budgets_scaled_for_practice():
    slow = slowdown_of(probe_seconds(stepping_clock(*[20 * TYPICAL_SECONDS] * 3), loops=10))
    assert abs(slow - 20) < 1e-6
    limits = calibrated(Limits(), practice=True, factor=slow)
    assert limits.call_seconds == 200 and limits.total_seconds == 1200 and limits.load_budget == 600
    assert limits.scaled and limits.slowdown == slow
    assert calibrated(limits, practice=True, factor=slow) is limits  # never scaled twice


def test_a_course_keeps_its_budgets_and_names_the_machine():
    limits = calibrated(Limits(call_seconds=5), practice=False, factor=20.0)
    assert limits.call_seconds == 5 and limits.total_seconds == 60 and not limits.scaled
    said = limits.too_slow()
    assert "20x slower" in said and "set by hand" in said


def test_budgets_set_by_hand_are_kept_in_practice():
    limits = calibrated(Limits(call_seconds=400, fixed=True), practice=True, factor=20.0)
    assert limits.call_seconds == 400 and not limits.scaled and limits.slowdown == 20.0


def test_a_typical_machine_keeps_the_defaults_and_the_plain_sentence():
    limits = calibrated(Limits(), practice=True, factor=1.0)
    assert limits.call_seconds == Limits().call_seconds
    assert limits.too_slow() == "an endless loop, or far too slow"


def test_a_scaled_budget_that_still_runs_out_says_it_was_scaled():
    said = calibrated(Limits(), practice=True, factor=25.0).too_slow()
    assert "already 25x" in said


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_a_slowdown_is_between_one_and_the_cap(seconds):
    slow = slowdown_of(seconds)
    assert 1.0 <= slow <= MAX_SLOWDOWN


@given(st.floats(0, 100), st.floats(0, 100))
def test_a_slower_probe_never_gets_a_smaller_budget(a, b):
    a, b = sorted((a, b))
    assert slowdown_of(a) <= slowdown_of(b)


def test_the_command_line_marks_a_hand_set_budget_fixed(monkeypatch, tmp_path):
    from backprop_traps.grader import cli
    seen = []
    monkeypatch.setattr("backprop_traps.grader.engine.run.grade_path",
                        lambda path, **kw: seen.append(kw["limits"]) or _NoResult())
    monkeypatch.setattr(cli, "_refuse_during_a_mock", lambda what: None)
    monkeypatch.chdir(tmp_path)  # a folder of its own for a.py
    runner = CliRunner()
    (tmp_path / "a.py").write_text("# question: vram_trap\n")
    runner.invoke(cli.main, ["check", "a.py", "--json"])
    runner.invoke(cli.main, ["check", "a.py", "--json", "--call-timeout", "400"])
    assert [limits.fixed for limits in seen] == [False, True]


class _NoResult:
    def to_json(self):
        return {}


def test_grading_probes_the_machine_once_per_process(monkeypatch):
    monkeypatch.delenv(machine_speed.SLOWDOWN_ENV, raising=False)
    machine_speed.slowdown.cache_clear()
    calls = []
    monkeypatch.setattr(machine_speed, "probe_seconds", lambda: calls.append(1) or 0.0)
    try:
        assert machine_speed.slowdown() == machine_speed.slowdown() == 1.0
        assert len(calls) == 1
    finally:
        machine_speed.slowdown.cache_clear()


@given(st.text(max_size=40))
def test_a_given_slowdown_is_read_capped_and_never_raises(given_text):
    import os
    old = os.environ.get(machine_speed.SLOWDOWN_ENV)
    try:
        os.environ[machine_speed.SLOWDOWN_ENV] = given_text.replace("\0", "")
        machine_speed.slowdown.cache_clear()
        machine_speed.probe_seconds, real = (lambda: 0.0), machine_speed.probe_seconds
        try:
            assert 1.0 <= machine_speed.slowdown() <= MAX_SLOWDOWN
        finally:
            machine_speed.probe_seconds = real
    finally:
        if old is None:
            os.environ.pop(machine_speed.SLOWDOWN_ENV, None)
        else:
            os.environ[machine_speed.SLOWDOWN_ENV] = old
        machine_speed.slowdown.cache_clear()


def test_a_given_slowdown_replaces_the_probe(monkeypatch):
    monkeypatch.setenv(machine_speed.SLOWDOWN_ENV, "20")
    monkeypatch.setattr(machine_speed, "probe_seconds", lambda: 1 / 0)
    machine_speed.slowdown.cache_clear()
    try:
        assert machine_speed.slowdown() == 20.0
    finally:
        machine_speed.slowdown.cache_clear()


def test_a_sandboxed_timeout_says_the_budget_was_already_scaled():
    """The sentence a learner reads after an endless loop, from the sandbox itself."""
    from backprop_traps.grader.sandbox.process import Sandbox
    scaled = Limits(call_seconds=1.0, total_seconds=30.0, load_seconds=60.0, slowdown=25.0, scaled=True)
    with Sandbox("def spin():\n    while True:\n        pass\n", scaled) as box:
        result = box.call("spin")
    assert result.kind == "timeout"
    assert "within 1 s" in result.error and "already 25x" in result.error, result.error


def test_the_doctors_bubblewrap_probe_waits_longer_on_a_slow_machine(monkeypatch):
    """On QEMU's emulation the probe's fixed 20 s ran out, and `grade doctor` said "NO"."""
    import subprocess
    from backprop_traps.grader.sandbox import bwrap
    waited = []

    def too_slow(cmd, timeout, **kw):
        waited.append(timeout)
        raise subprocess.TimeoutExpired(cmd, timeout)
    monkeypatch.setattr(machine_speed, "slowdown", lambda: 20.0)
    monkeypatch.setattr(bwrap, "executable", lambda: "/usr/bin/bwrap")
    monkeypatch.setattr(subprocess, "run", too_slow)
    monkeypatch.delenv(bwrap.FORCE_OFF, raising=False)
    bwrap.probe.cache_clear()
    try:
        ok, said = bwrap.probe()
    finally:
        bwrap.probe.cache_clear()
    assert not ok and waited == [bwrap.PROBE_SECONDS * 20]
    assert "20x slower" in said and "not known whether it works" in said
