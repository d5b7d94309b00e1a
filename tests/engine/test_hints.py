"""Hints and the local history file: one hint at a time, never code, never a traceback."""
import json
import os
import re

import pytest
from click.testing import CliRunner

from backprop_traps.grader.checks import load_question
from backprop_traps.grader.cli import main
from backprop_traps.grader.learner.history import FILENAME, History
from backprop_traps.grader.loading.notebook import cell_source, parse_notebook
from backprop_traps.grader.loading.questions import solution_notebooks

_SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)


def solution_lines(question: str) -> list[str]:
    """Every non-trivial line between the solution notebook's BEGIN/END SOLUTION markers."""
    nb = parse_notebook(solution_notebooks()[question].read_text(encoding="utf-8"))
    bodies = [m.group(1) for c in nb["cells"] if c.get("cell_type") == "code"
              for m in _SOLUTION.finditer(cell_source(c))]
    return [ln.strip() for body in bodies for ln in body.splitlines() if len(ln.strip()) >= 12]


def test_every_routing_trap_check_has_three_hints_without_code():
    question = load_question("routing_trap")
    code = solution_lines("routing_trap")
    assert code
    for check in question.checks:
        assert len(check.hints) == 3, check.name
        assert len(set(check.hints)) == 3, check.name
        for hint in check.hints:
            assert not [ln for ln in code if ln in hint], (check.name, hint)


@pytest.mark.parametrize("question", list(solution_notebooks()))
def test_hints_of_every_question_are_few_and_hold_no_solution_line(question):
    try:
        checks = load_question(question).checks
    except ModuleNotFoundError:
        pytest.skip(f"{question} has no hidden checks yet")
    code = solution_lines(question)
    for check in checks:
        assert len(check.hints) <= 3, check.name
        for hint in check.hints:
            assert not [ln for ln in code if ln in hint], (check.name, hint)


def test_history_records_the_best_score_and_survives_a_round_trip(tmp_path):
    h = History.load(tmp_path)
    h.record_score("routing_trap", 4, 12)
    h.record_score("routing_trap", 9, 12)
    h.record_score("routing_trap", 7, 12)
    assert h.save()
    again = History.load(tmp_path)
    assert again.best("routing_trap") == (9.0, 12.0)
    assert again.questions["routing_trap"]["attempts"] == 3
    assert again.best("softmax_ce") is None
    assert not [p for p in os.listdir(tmp_path) if p != FILENAME]  # no temporary file left


def test_hints_come_one_at_a_time_per_check(tmp_path):
    h = History.load(tmp_path)
    hints = ("a", "b", "c")
    assert h.next_hint("q", "check one", hints) == (1, "a")
    assert h.next_hint("q", "check two", hints) == (1, "a")  # counted per check
    assert h.next_hint("q", "check one", hints) == (2, "b")
    assert h.next_hint("q", "check one", hints) == (3, "c")
    assert h.next_hint("q", "check one", hints) is None
    h.save()
    assert History.load(tmp_path).hints_seen("q", "check one") == 3


@pytest.mark.parametrize("content", [b"{", b"[]", b'{"questions": 3}', b"\xff\xfe not UTF-8",
                                     b'{"questions": {"routing_trap": {"best": "x", "hints_seen": [1]}}}'])
def test_a_corrupt_history_reads_as_empty(tmp_path, content):
    (tmp_path / FILENAME).write_bytes(content)
    h = History.load(tmp_path)
    assert h.best("routing_trap") is None
    h.record_score("routing_trap", 1, 12)
    assert h.save() and History.load(tmp_path).best("routing_trap") == (1.0, 12.0)


def test_an_unwritable_folder_keeps_no_history_and_raises_nothing(tmp_path):
    h = History(tmp_path / "no such folder" / FILENAME)
    h.record_score("routing_trap", 1, 12)
    assert h.save() is False


def test_grading_remembers_the_score_but_json_writes_nothing(tmp_path, monkeypatch, answer_file):
    path = answer_file("routing_trap", "avg_unscaled")
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(main, [str(path), "--json"])
    assert out.exit_code == 0 and json.loads(out.stdout)["score"] == 10.0
    assert not (tmp_path / FILENAME).exists()
    out = CliRunner().invoke(main, [str(path)])
    assert out.exit_code == 0 and "--hint" in out.stdout  # the tip points at the hints
    assert History.load(tmp_path).best("routing_trap") == (10.0, 12.0)
    assert CliRunner().invoke(main, [str(path), "--json", "--hint"]).exit_code == 2


def test_hint_with_a_corrupt_history_still_works(tmp_path, monkeypatch, answer_file):
    path = answer_file("routing_trap", "avg_unscaled")
    monkeypatch.chdir(tmp_path)
    (tmp_path / FILENAME).write_text("{not json")
    out = CliRunner().invoke(main, [str(path), "--hint"])
    assert out.exit_code == 0 and "Hint 1 of 3" in out.stdout and "Traceback" not in out.stdout
    assert History.load(tmp_path).hints_seen("routing_trap", "average pooling forward and backward") == 1
