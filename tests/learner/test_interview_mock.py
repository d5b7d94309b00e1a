"""`grade mock`: the flow against a script (spoken answer, code, follow-ups, one summary), the
clock running out, the refusals while a mock runs, and the whole mock in a real pseudo-terminal."""
import datetime as dt
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from backprop_traps.grader.cli import main
from backprop_traps.grader.learner import mock, mock_clock, rehearsal
from backprop_traps.grader.learner.history import FILENAME, History
from conftest import REPO

ANSWER = REPO / "tests" / "answers" / "routing_trap" / "right_loops.py"
SPOKEN = ("The gradient of a max goes only to the winner of each window, so the forward must save the "
          "argmax index. Where windows overlap, the gradients add up.")


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKPROP_TRAPS_QUESTIONS", raising=False)
    monkeypatch.delenv("BACKPROP_TRAPS_NOW", raising=False)
    return tmp_path


class FakeClock(mock.Clock):
    """A clock that moves only when ``tick`` says."""

    def __init__(self, minutes):
        self.t = 0.0
        super().__init__(minutes, monotonic=lambda: self.t)


class Result:
    score, max_score, error = 7.0, 12.0, None

    class T:
        def __init__(self, name, passed):
            self.name, self.passed = name, passed
    tests = [T("routes to the winner", True), T("overlaps accumulate", False)]


def script(lines, clock=None, step=10.0):
    said, asked = [], []

    def ask(prompt, seconds):
        asked.append(prompt)
        if clock is not None:
            clock.t += step
            if clock.left() <= 0:
                return mock.TIMEOUT
        return lines.pop(0) if lines else None
    return ask, said.append, said, asked


def test_the_flow_chains_the_spoken_answer_the_code_and_the_follow_ups(here):
    (here / "mine.py").write_text("x = 1\n")
    chosen = rehearsal.load("routing_trap", REPO)
    ask, say, said, asked = script([SPOKEN, "", "mine.py", "8 bytes an index", "", "", "", ""])
    graded = []
    outcome = mock.run(chosen, here / "01_routing_trap.ipynb", 45, ask, say,
                       lambda p: graded.append(p) or Result(), FakeClock(45))
    text = "\n".join(said)
    assert "No hints and no reveal" in text and chosen.interview.hired not in text  # nothing revealed
    assert graded == [Path("mine.py")] and outcome.code["score"] == 7.0 and outcome.code["failed"] == ["overlaps accumulate"]
    assert outcome.spoken["hit"] == 3 and not outcome.timed_out
    assert [f[1] for f in outcome.follow_ups] == ["8 bytes an index", "", "", ""]
    assert all(p.startswith("[") and "] " in p for p in asked)  # every prompt shows the clock
    summary = mock.summary(outcome, chosen, "bptt's code (overdue 2 days)")
    assert "Spoken answer: 3/5 key points." in summary and "right   each window's gradient" in summary
    assert "missed  a tie needs one rule" in summary and "Code: 7/12" in summary
    assert "missed  overlaps accumulate" in summary and chosen.interview.hired[:40] in " ".join(summary.split())
    assert "you: 8 bytes an index" in summary and "Due next: bptt's code" in summary
    record = outcome.record("2026-03-02")
    assert record["spoken"] == {"hit": 3, "of": 5} and record["code"] == {"score": 7.0, "max_score": 12.0}
    assert "overlaps accumulate" in record["missed"]


def test_when_the_clock_runs_out_the_code_is_graded_as_it_is(here):
    notebook = here / "01_routing_trap.ipynb"
    notebook.write_text("{}")
    chosen = rehearsal.load("routing_trap", REPO)
    clock = FakeClock(1)
    ask, say, said, _ = script([SPOKEN, ""], clock, step=25.0)
    outcome = mock.run(chosen, notebook, 1, ask, say, lambda p: Result(), clock)
    assert outcome.timed_out and outcome.code is not None and outcome.follow_ups == []
    assert "Time is up: your code is graded as it is." in "\n".join(said)
    assert "(the clock ran out)" in mock.summary(outcome, chosen, "-")


def _running(folder, question="routing_trap", minutes=30):
    h = History.load(folder)
    mock_clock.start(h, question, minutes, dt.datetime.now().astimezone())
    h.save()


@pytest.mark.parametrize("args, what", [
    (["mine.py", "--hint"], "a hint waits"),
    (["mine.py"], "grading by hand"),
    (["reveal", "routing_trap"], "revealing the derivation"),
    (["start", "routing_trap", "--solution"], "copying the solution"),
    (["interview", "bptt"], "rehearsing an interview"),
    (["interview", "bptt", "--answer", "-", "--json"], "rehearsing an interview"),
    (["mock"], "already running"),
])
def test_a_running_mock_refuses_hints_and_reveals_with_a_sentence(here, args, what):
    (here / "mine.py").write_text(ANSWER.read_text())
    _running(here)
    out = CliRunner().invoke(main, args, input="")
    assert out.exit_code in (1, 2) and what in out.output and "Traceback" not in out.output
    assert "A mock interview of routing_trap is running" in out.output or "already running" in out.output


def test_a_stale_mock_mark_refuses_nothing(here):
    h = History.load(here)
    mock_clock.start(h, "routing_trap", 1, dt.datetime.now().astimezone() - dt.timedelta(hours=2))
    h.save()
    out = CliRunner().invoke(main, ["reveal", "routing_trap"])
    assert out.exit_code == 0 and "mock" not in out.output


def _grade():
    beside = Path(sys.executable).with_name("grade")
    return str(beside) if beside.is_file() else shutil.which("grade")


def test_a_mock_interview_in_a_terminal(here):
    pexpect = pytest.importorskip("pexpect")
    (here / "mine.py").write_text(ANSWER.read_text())
    child = pexpect.spawn(_grade(), ["mock", "routing_trap", "--minutes", "10"], cwd=str(here), encoding="utf-8",
                          timeout=60, env={**os.environ, "NO_COLOR": "1"}, dimensions=(40, 120))
    child.expect("Copied the routing_trap stub to 01_routing_trap.ipynb")
    child.expect(r"Mock interview · routing_trap · question 01 · 10:00 on the clock")
    child.expect(r"\[(09:5\d|10:00)\] > ")  # the clock in the prompt
    child.sendline(SPOKEN)
    child.expect(r"\] > ")
    hint = subprocess.run([_grade(), "mine.py", "--hint"], cwd=here, capture_output=True, text=True, timeout=60)
    assert hint.returncode == 1 and "a hint waits until it ends" in hint.stderr  # refused meanwhile
    child.sendline("")
    child.expect(r"done\? ")
    assert "The answer that gets you hired" not in child.before
    child.sendline("")  # Enter shows the clock
    child.expect(r"\[\d\d:\d\d\] done\? ")
    child.sendline("mine.py")
    child.expect("Grading mine.py")
    child.expect(r"Follow-ups \(4\)")
    child.expect(r"1/4  What does caching the argmax cost\?")
    child.expect(r"\] > ")
    child.sendline("An int64 per output.")
    child.expect(r"\] > ")
    child.sendline("")
    for _ in range(3):
        child.expect(r"\] > ")
        child.sendline("")
    child.expect("Mock over")
    child.expect(r"Spoken answer: 3/5 key points\.")
    child.expect(r"Code: 12/12 \(mine\.py\)")
    child.expect("The answer that gets you hired")
    child.expect("you: An int64 per output.")
    child.expect("Due next: ")
    child.expect(f"Recorded in {FILENAME}")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    h = History.load(here)
    (entry,) = h.sections["mocks"]
    assert entry["question"] == "routing_trap" and entry["code"] == {"score": 12.0, "max_score": 12.0}
    assert h.best("routing_trap") == (12.0, 12.0) and h.interviews("routing_trap")[0]["hit"] == 3
    assert "mock" not in h.sections and {"routing_trap:code", "routing_trap:spoken"} <= set(h.sections["review"]["cards"])


def test_a_mock_whose_clock_runs_out_in_a_terminal(here):
    pexpect = pytest.importorskip("pexpect")
    child = pexpect.spawn(_grade(), ["mock", "softmax_ce", "--minutes", "0.1"], cwd=str(here), encoding="utf-8",
                          timeout=90, env={**os.environ, "NO_COLOR": "1"}, dimensions=(40, 120))
    child.expect(r"\] > ")
    child.sendline("The gradient is softmax minus the one-hot label.")
    child.expect(r"\] > ")  # then say nothing more: the clock runs out while waiting
    child.expect("Grading 04_softmax_ce.ipynb")  # the stub, graded as it is
    child.expect(r"the clock ran out")
    child.expect(r"Spoken answer: 1/5 key points\.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    (entry,) = History.load(here).sections["mocks"]
    assert entry["timed_out"] and entry["code"]["score"] == 0.0


def test_grade_interview_mock_is_grade_mock(here):
    out = CliRunner().invoke(main, ["interview", "routing_trap", "--mock", "--answer", "-"])
    assert out.exit_code == 2 and "--mock asks in the terminal" in out.output
    out = CliRunner().invoke(main, ["interview", "routing_trap", "--minutes", "3"])
    assert out.exit_code == 2 and "--minutes goes with --mock" in out.output
    out = CliRunner().invoke(main, ["interview", "routing_trap", "--mock", "--minutes", "5"], input="")
    assert "Mock interview · routing_trap" in out.output and "05:00 on the clock" in out.output


@pytest.mark.parametrize("seconds, words", [(119, "1 min 59 s"), (60, "1 min"), (59.2, "1 min"), (45, "45 s"),
                                            (0.4, "1 s"), (599.5, "10 min"), (601, "11 min"), (2700, "45 min")])
def test_the_time_left_in_words_is_never_less_than_it_is(seconds, words):
    """Issue 51: at 1:59 left a refusal said "(1 min left)"."""
    assert mock_clock.time_left_words(seconds) == words


def test_a_refusal_at_1_59_left_says_so(here, monkeypatch):
    h = History.load(here)
    mock_clock.start(h, "routing_trap", 5, dt.datetime(2026, 3, 2, 10, 0, tzinfo=dt.timezone.utc))
    h.save()
    monkeypatch.setenv("BACKPROP_TRAPS_NOW", "2026-03-02T10:03:01+00:00")
    out = CliRunner().invoke(main, ["reveal", "routing_trap"])
    assert out.exit_code == 1 and "(1 min 59 s left)" in out.output, out.output


def test_the_minute_left_notice_redraws_the_prompt_with_the_clock_of_now(monkeypatch, capsys):
    """Issue 51: the "1 minute left" notice redrew the prompt of when it was first drawn
    ([01:19] with 1:00 left). A fake clock moves 7 s at every look; stdin never answers."""
    from backprop_traps.grader.commands.mock import _timed_ask
    clock = FakeClock(1.5)
    real = clock.monotonic
    clock.monotonic = lambda: (setattr(clock, "t", clock.t + 7.0), real())[1]
    # stdin never answers: each wait ends at once (the fake clock, not the real one, moves)
    from backprop_traps.grader.commands import mock as mock_command
    monkeypatch.setattr(mock_command.select, "select", lambda *args: ([], [], []))
    read, write = os.pipe()
    try:
        with os.fdopen(read) as stdin:
            monkeypatch.setattr(sys, "stdin", stdin)
            ask = _timed_ask(clock)
            assert ask(f"[{clock.shown()}] > ", clock.left()) is mock.TIMEOUT
    finally:
        os.close(write)
    out = capsys.readouterr().out
    notice = out.split("(1 minute left)\n", 1)[1]
    shown = notice.split("]", 1)[0].lstrip("[")
    minutes, seconds = map(int, shown.split(":"))
    assert minutes * 60 + seconds <= 60, out


def test_follow_ups_the_clock_left_no_time_for_are_in_the_summary(here):
    """Issue 51: when the time ran out the follow-ups were skipped and the summary had none."""
    notebook = here / "01_routing_trap.ipynb"
    notebook.write_text("{}")
    chosen = rehearsal.load("routing_trap", REPO)
    clock = FakeClock(1)
    ask, say, said, _ = script([SPOKEN, ""], clock, step=25.0)
    outcome = mock.run(chosen, notebook, 1, ask, say, lambda p: Result(), clock)
    assert outcome.timed_out and len(outcome.skipped) == len(chosen.interview.follow_ups) > 0
    summary = mock.summary(outcome, chosen, "-")
    assert f"Follow-ups the clock left no time for ({len(outcome.skipped)})" in summary
    flat = " ".join(summary.split())
    for question, ours in chosen.interview.follow_ups:
        assert " ".join(question.split())[:40] in flat and " ".join(ours.split())[:40] in flat
    assert outcome.record("2026-03-02")["follow_ups_skipped"] == len(outcome.skipped)
