"""Issue 43, class 5: inputs without the same caps everywhere.

`grade mock --minutes 1e12` and `--minutes inf` crashed; the mock read a pasted answer without
limit (5/5 key points from text that `grade interview --answer`, which stopped at 64 KiB,
scored 0/5); `grade interview --answer` on a 1 GiB file took 45 s before it answered.

Now every numeric option has a bounded, finite click type (grader/commands/options.py), and
an answer has one cap whichever way it comes, applied before reading: past it, it is refused
with one sentence, and never more than the cap and a byte is read.
"""
import math
import os

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backprop_traps.grader.cli import main
from backprop_traps.grader.learner import mock, rehearsal
from conftest import REPO

HIRED = rehearsal.load("routing_trap", REPO).interview.hired


def numeric_options():
    """Every numeric option of every command: (command path, option)."""
    found = []

    def walk(command, path):
        for param in command.params:
            if isinstance(param, click.Option) and isinstance(param.type, (click.types.IntParamType,
                                                                           click.types.FloatParamType)):
                found.append((path, param))
        if isinstance(command, click.Group):  # its commands load lazily: ask for each
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name), path + [name])
    walk(main, [])
    return found


OPTIONS = numeric_options()


def test_every_numeric_option_is_a_bounded_range():
    assert len(OPTIONS) >= 10
    for path, option in OPTIONS:
        kind = option.type
        assert isinstance(kind, (click.IntRange, click.FloatRange)), (path, option.name)
        assert kind.min is not None and kind.max is not None, (path, option.name)
        assert math.isfinite(kind.min) and math.isfinite(kind.max), (path, option.name)


option_values = (st.floats(allow_nan=True, allow_infinity=True).map(repr)
                 | st.integers(-10**30, 10**30).map(str)
                 | st.sampled_from(["1e12", "inf", "-inf", "nan", "NaN", "-0", "0", "1e-9", "1e309", "0x10", ""])
                 | st.text(max_size=8))


@given(index=st.integers(0, len(OPTIONS) - 1), value=option_values)
@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
def test_no_numeric_option_takes_a_value_a_command_cannot_use(index, value):
    path, option = OPTIONS[index]
    try:
        found = option.type.convert(value, option, None)
    except click.BadParameter as e:
        assert "\n" not in e.format_message()
        return
    assert math.isfinite(found) and option.type.min <= found <= option.type.max


@pytest.mark.parametrize("value", ["1e12", "inf", "nan", "-1", "0", "-inf", "1e309"])
@pytest.mark.parametrize("command", [["mock", "routing_trap"], ["interview", "routing_trap", "--mock"]])
def test_the_issues_minutes_are_refused_with_one_sentence(tmp_path, monkeypatch, command, value):
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(main, command + ["--minutes", value], input="")
    assert out.exit_code == 2 and "--minutes" in out.stderr and "Traceback" not in out.output
    assert not isinstance(out.exception, Exception) or isinstance(out.exception, SystemExit)
    assert not list(tmp_path.iterdir())  # nothing started, nothing copied


@pytest.mark.parametrize("args", [["--seed", "-5"], ["--seed", str(2**64)], ["--call-timeout", "nan"],
                                  ["--total-timeout", "inf"], ["--memory-mb", "0"], ["--code-timeout", "-1"]])
def test_grade_refuses_limits_and_seeds_it_cannot_use(tmp_path, args):
    answer = tmp_path / "answer.py"
    answer.write_text("# question: routing_trap\n")
    out = CliRunner().invoke(main, [str(answer), *args])
    assert out.exit_code == 2 and args[0] in out.stderr and "Traceback" not in out.output


def test_a_1_gib_answer_file_is_refused_before_any_of_it_is_read(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with open("huge.txt", "wb") as f:  # sparse: 1 GiB on paper, nothing on disk
        f.truncate(2**30)
    read = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: read.append(n) or real_read(fd, n))
    out = CliRunner().invoke(main, ["interview", "routing_trap", "--answer", "huge.txt", "--json"])
    assert out.exit_code == 2 and "over 64 KB" in out.stderr and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and sum(read) == 0


@given(extra=st.integers(1, 5000))
@settings(max_examples=8, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_stdin_past_the_cap_is_refused_after_reading_at_most_a_byte_more(extra):
    class Counting:
        def __init__(self, data):
            self.data, self.asked = data, []

        def read(self, n):
            self.asked.append(n)
            return self.data[:n]
    stdin = Counting(b"w " * ((rehearsal.MAX_ANSWER_BYTES + extra) // 2 + 1))
    stdin.buffer = stdin
    with pytest.raises(rehearsal.AnswerTooLong):
        rehearsal.read_answer("-", stdin)
    assert stdin.asked == [rehearsal.MAX_ANSWER_BYTES + 1]


def _mock_with(lines, tmp_path):
    said = []
    feed = list(lines)
    outcome = mock.run(rehearsal.load("routing_trap", REPO), tmp_path / "missing.ipynb", 45,
                       lambda prompt, seconds: feed.pop(0) if feed else None, said.append, lambda p: None)
    return outcome, "\n".join(said)


def test_the_mock_holds_a_pasted_answer_to_the_same_cap(tmp_path):
    """The issue's example: 5/5 key points from text past the cap, which `interview --answer`
    refuses. The mock now refuses it the same way; under the cap it is checked as before."""
    filler = ["filler words that say nothing at all " * 50] * (rehearsal.MAX_ANSWER_BYTES // 1900 + 2)
    outcome, said = _mock_with(filler + [HIRED, ""], tmp_path)
    assert outcome.spoken["hit"] == 0 and "over 64 KB" in said
    outcome, said = _mock_with([HIRED, ""], tmp_path)
    assert outcome.spoken["hit"] == outcome.spoken["of"] > 0 and "over 64 KB" not in said


def test_a_typed_path_too_long_for_the_system_is_no_file(tmp_path):
    outcome, said = _mock_with(["", "x" * 100_000, "a\0b", "done"], tmp_path)
    assert "is not a file here" in said and outcome.code is None


def test_the_interactive_rehearsal_holds_a_typed_answer_to_the_same_cap():
    said = []
    lines = ["filler words that say nothing at all " * 50] * (rehearsal.MAX_ANSWER_BYTES // 1900 + 2) + [HIRED, ""]
    hit, of = rehearsal.rehearse(rehearsal.load("routing_trap", REPO), lambda prompt: lines.pop(0) if lines else None,
                                 said.append, lambda hit, of: None)
    assert hit == 0 and of > 0 and any("over 64 KB" in s for s in said)
