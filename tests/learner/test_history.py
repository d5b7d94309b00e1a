"""The learner's history: a broken file is kept as a backup (said once), re-grading the same
file is not an attempt, and the interview and derivation entries round-trip and are cleaned."""
import json

from click.testing import CliRunner

from backprop_traps.grader.cli import main
from backprop_traps.grader.learner.history import FILENAME, History


def test_a_broken_history_is_kept_as_a_backup_and_said_once(tmp_path, capsys):
    (tmp_path / FILENAME).write_text("{half a file", encoding="utf-8")
    h = History.load(tmp_path)
    said = capsys.readouterr().err
    assert f"kept as {FILENAME}.broken" in said and said.count("\n") == 1
    assert (tmp_path / f"{FILENAME}.broken").read_text(encoding="utf-8") == "{half a file"
    h.record_interview("softmax_ce", 3, 5, "2026-01-01")
    assert h.save()
    assert History.load(tmp_path).interviews("softmax_ce")[0]["hit"] == 3
    assert capsys.readouterr().err == ""  # said once: the next load finds a good file
    (tmp_path / FILENAME).write_text("[]", encoding="utf-8")
    History.load(tmp_path)
    assert f"kept as {FILENAME}.broken-2" in capsys.readouterr().err  # the first backup is kept too


def test_a_broken_history_that_cannot_be_moved_is_never_overwritten(tmp_path, monkeypatch, capsys):
    (tmp_path / FILENAME).write_text("not json", encoding="utf-8")
    import backprop_traps.grader.learner.history as history

    def refuse(*_):
        raise PermissionError("read-only")
    monkeypatch.setattr(history.os, "replace", refuse)
    h = History.load(tmp_path)
    assert "could not be moved aside" in capsys.readouterr().err
    h.record_score("routing_trap", 1, 12)
    assert h.save() is False and (tmp_path / FILENAME).read_text(encoding="utf-8") == "not json"


def test_the_same_file_graded_again_is_not_an_attempt(tmp_path):
    h = History.load(tmp_path)
    h.record_score("routing_trap", 4, 12, "hash-a")
    h.record_score("routing_trap", 4, 12, "hash-a")  # --hint re-run
    h.record_score("routing_trap", 5, 12, "hash-a")  # --seed replay
    assert h.questions["routing_trap"]["attempts"] == 1
    h.record_score("routing_trap", 9, 12, "hash-b")  # an edit
    h.record_score("routing_trap", 8, 12, None)      # unreadable afterwards: counted
    assert h.questions["routing_trap"]["attempts"] == 3
    assert h.best("routing_trap") == (9.0, 12.0) and h.last("routing_trap") == (8.0, 12.0)


def test_hint_reruns_and_seed_replays_of_the_same_file_do_not_count(tmp_path, monkeypatch, answer_file):
    path = answer_file("routing_trap", "avg_unscaled")
    copy = tmp_path / "mine.py"
    copy.write_bytes(path.read_bytes())
    monkeypatch.chdir(tmp_path)
    for args in ([], ["--hint"], ["--hint"], ["--seed", "7"]):
        assert CliRunner().invoke(main, [str(copy), *args]).exit_code == 0
    assert History.load(tmp_path).questions["routing_trap"]["attempts"] == 1
    copy.write_text(copy.read_text() + "\n# an edit\n")
    assert CliRunner().invoke(main, [str(copy), "--hint"]).exit_code == 0
    assert History.load(tmp_path).questions["routing_trap"]["attempts"] == 2


def test_interviews_and_revealed_round_trip_and_malformed_ones_are_dropped(tmp_path):
    raw = {"version": 1, "questions": {"q": {
        "revealed": 2, "last": 3.0, "best": 4.0, "max_score": 5.0,
        "interviews": [{"date": "2026-01-01", "hit": 2, "of": 5}, {"date": 3, "hit": 1, "of": 2},
                       {"date": "2026-01-02", "hit": 6, "of": 5}, {"date": "2026-01-03", "hit": True, "of": 1},
                       "junk", {"date": "2026-01-04", "hit": 0, "of": 4}]}}}
    (tmp_path / FILENAME).write_text(json.dumps(raw), encoding="utf-8")
    h = History.load(tmp_path)
    assert h.revealed("q") == 2 and h.last("q") == (3.0, 5.0) and h.revealed("other") == 0
    assert [i["date"] for i in h.interviews("q")] == ["2026-01-01", "2026-01-04"]
    assert h.save() and History.load(tmp_path).questions == h.questions


def test_a_notebook_saved_with_new_outputs_is_the_same_attempt(tmp_path):
    import nbformat
    from conftest import REPO
    from backprop_traps.grader.learner.after_grading import fingerprint as _fingerprint
    nb = nbformat.read(str(REPO / "solutions" / "04_softmax_ce.ipynb"), as_version=4)
    path = tmp_path / "04_softmax_ce.ipynb"
    nbformat.write(nb, str(path))
    before = _fingerprint(str(path))
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.outputs, code.execution_count = [nbformat.v4.new_output("stream", text="hi\n")], 7
    nbformat.write(nb, str(path))
    assert _fingerprint(str(path)) == before
    code.source += "\n# an edit"
    nbformat.write(nb, str(path))
    assert _fingerprint(str(path)) != before
    assert _fingerprint(str(tmp_path / "gone.py")) is None


def test_grade_list_says_once_where_a_broken_history_went(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / FILENAME).write_text("{", encoding="utf-8")
    first = CliRunner().invoke(main, ["list"])
    assert first.exit_code == 0 and f"kept as {FILENAME}.broken" in first.stderr
    assert "not graded" in first.stdout and "Traceback" not in first.output
    assert f"{FILENAME}.broken" not in CliRunner().invoke(main, ["list"]).stderr
