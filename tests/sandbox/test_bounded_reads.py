"""Issue 35, item 3: every file the grader reads from a learner's folder is read one bounded
way (grader/loading/bounded.py), and nothing there can hang, crash or exhaust `grade`.

The reader itself on each kind of hostile file; each place that reads one (the history, an
interview answer, a submission, a batch's timestamp.txt, stored results); and a guard that
fails when a plain read appears in the modules that read learner files. The red-team side
(`grade FILE` and `grade list` run as a learner would, with a deadline) is
tests/redteam/test_redteam_files.py.
"""
import ast
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import REPO
from backprop_traps.grader.cli import main
from backprop_traps.grader.learner.history import FILENAME, History
from backprop_traps.grader.loading import bounded
from backprop_traps.grader.loading.submission import load_submission

DEEP = "[" * 200_000 + "]" * 200_000
"""The issue's attack: 400 kB of nested lists, RecursionError in json.loads."""


def hostile(folder: Path, kind: str, name: str) -> Path:
    """A file called ``name`` in ``folder`` that is ``kind``: deep JSON, a FIFO, a link to
    /dev/zero, a sparse terabyte, a folder, a link to a good file."""
    path = folder / name
    if kind == "deep":
        path.write_text(DEEP)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        path.symlink_to("/dev/zero")
    elif kind == "sparse":
        with open(path, "wb") as f:
            f.truncate(1 << 40)
    elif kind == "folder":
        path.mkdir()
    elif kind == "link":
        target = folder / f"real-{name}"
        target.write_text("{}")
        path.symlink_to(target)
    return path


KINDS = ["deep", "fifo", "zero", "sparse", "folder", "link"]


# -- the reader ------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_the_reader_refuses_each_hostile_file_with_a_sentence(tmp_path, kind):
    path = hostile(tmp_path, kind, "f.json")
    with pytest.raises(bounded.Unreadable) as refused:
        bounded.read_json(path, 1 << 20)
    assert path.name in str(refused.value) and not refused.value.missing
    assert refused.value.regular == (kind in ("deep", "sparse"))


def test_the_reader_reads_a_good_file_and_says_missing(tmp_path):
    (tmp_path / "ok.json").write_text('{"a": [1, {"b": "[[[ }"}], "c": "\\"]"}')
    assert bounded.read_json(tmp_path / "ok.json", 1024) == {"a": [1, {"b": "[[[ }"}], "c": '"]'}
    with pytest.raises(bounded.Unreadable) as gone:
        bounded.read_json(tmp_path / "gone.json", 1024)
    assert gone.value.missing


@pytest.mark.parametrize("text, why", [
    (DEEP, "deeper than"), ("[" * 65 + "]" * 65, "deeper than"), ("[[[}", "not valid JSON"),
    ('{"a": "' + "[" * 10_000 + '"}', None), ("[" * 30 + "]" * 30, None), ("[1, 2, 3]", None),
])
def test_json_depth_is_judged_before_parsing(text, why):
    said = bounded.json_shape_error(text)
    assert (said is None) if why is None else (why in said)


def test_a_cut_read_never_goes_past_its_cap(tmp_path):
    (tmp_path / "big.txt").write_bytes(b"x" * 5000)
    assert bounded.read_bytes(tmp_path / "big.txt", 100, cut=True) == b"x" * 100
    with pytest.raises(bounded.Unreadable, match="over the"):
        bounded.read_bytes(tmp_path / "big.txt", 100)


# -- the history -----------------------------------------------------------------------------
def test_a_deep_or_huge_history_is_set_aside_as_broken(tmp_path, capsys):
    for n, kind in enumerate(["deep", "sparse"], 1):
        hostile(tmp_path, kind, FILENAME)
        h = History.load(tmp_path)
        assert h.questions == {} and h.writable
        backup = f"{FILENAME}.broken" + ("" if n == 1 else f"-{n}")
        assert f"kept as {backup}" in capsys.readouterr().err and (tmp_path / backup).exists()


@pytest.mark.parametrize("kind", ["fifo", "zero", "folder", "link"])
def test_a_history_that_is_not_a_regular_file_is_left_where_it_is(tmp_path, capsys, kind):
    """Set aside means: not read, not renamed, never written through; this run records nothing."""
    path = hostile(tmp_path, kind, FILENAME)
    before = os.lstat(path)
    h = History.load(tmp_path)
    said = capsys.readouterr().err
    assert "records nothing" in said and FILENAME in said
    h.record_score("routing_trap", 3, 12)
    assert h.save() is False
    after = os.lstat(path)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert not list(tmp_path.glob(f"{FILENAME}.broken*"))
    if kind == "link":
        assert (tmp_path / f"real-{FILENAME}").read_text() == "{}"


def test_a_dangling_link_is_never_renamed_over(tmp_path):
    (tmp_path / FILENAME).write_text("{broken")
    (tmp_path / f"{FILENAME}.broken").symlink_to(tmp_path / "nowhere")
    History.load(tmp_path)
    assert (tmp_path / f"{FILENAME}.broken").is_symlink()
    assert (tmp_path / f"{FILENAME}.broken-2").read_text() == "{broken"


# -- the interview's --answer ----------------------------------------------------------------
@pytest.mark.parametrize("kind", ["fifo", "zero", "link"])
def test_an_answer_file_that_is_not_a_regular_file_is_a_usage_error(tmp_path, monkeypatch, kind):
    monkeypatch.chdir(tmp_path)
    hostile(tmp_path, kind, "answer.txt")
    out = CliRunner().invoke(main, ["interview", "routing_trap", "--answer", "answer.txt", "--json"])
    assert out.exit_code == 2 and "answer.txt" in out.stderr and "Traceback" not in out.output


# -- submissions -----------------------------------------------------------------------------
@pytest.mark.parametrize("kind, says", [("fifo", "is a FIFO"), ("zero", "symbolic link"),
                                        ("sparse", "over the 16 MB"), ("link", "symbolic link")])
def test_a_submission_is_read_the_bounded_way(tmp_path, kind, says):
    sub = load_submission(hostile(tmp_path, kind, "answer.py"))
    assert says in sub.error


def test_a_deeply_nested_notebook_is_refused_before_parsing(tmp_path):
    (tmp_path / "deep.ipynb").write_text('{"cells": ' + DEEP + "}")
    assert "nests deeper" in load_submission(tmp_path / "deep.ipynb").error


def test_a_batch_timestamp_is_read_the_bounded_way(tmp_path):
    from backprop_traps.grader.batch.layouts import submitted_at
    folder = tmp_path / "s1" / "ps1"
    folder.mkdir(parents=True)
    (folder / "01_routing_trap.ipynb").write_text("{}")
    os.mkfifo(folder / "timestamp.txt")
    assert submitted_at(folder / "01_routing_trap.ipynb")  # the file's time: the FIFO is not waited on
    (folder / "timestamp.txt").unlink()
    (folder / "timestamp.txt").write_text("2026-03-01 17:00:00.000000 UTC")
    assert submitted_at(folder / "01_routing_trap.ipynb").startswith("2026-03-01T17:00:00")


def test_stored_results_are_read_the_bounded_way(tmp_path):
    from backprop_traps.grader.batch.store import _read_json
    (tmp_path / "r.json").write_text(DEEP)
    os.mkfifo(tmp_path / "f.json")
    assert _read_json(tmp_path / "r.json") is None and _read_json(tmp_path / "f.json") is None


# -- no plain read in the modules that read a learner's files -------------------------------
LEARNER_FACING = ["grader/learner", "grader/loading/submission.py", "grader/commands/learner.py",
                  "grader/commands/interview.py", "grader/commands/show.py", "grader/engine/visible_tests.py",
                  "grader/notebook_grade.py", "grader/nbgrader_bridge.py", "grader/batch/layouts.py",
                  "grader/batch/store.py", "grader/batch/grading.py", "grader/batch/export.py",
                  "grader/batch/gradebook.py"]
KIT_READS = {
    # (module, function): reads of the kit's or the instructor's own files, never a learner's
    ("grader/learner/reveal.py", "derivation"): "the solution notebook",
    ("grader/commands/learner.py", "_declared"): "the question's checks module",
    ("grader/commands/learner.py", "_first_heading"): "the solution notebook",
    ("grader/commands/learner.py", "_derivation_steps"): "the solution notebook",
    ("grader/learner/rehearsal.py", "read_answer"): "stdin (`--answer -`), capped",
    ("grader/learner/lexicon.py", "_table"): "lemminflect's word-form table, shipped in site-packages",
    ("grader/learner/keypoints.py", "__init__"): "clauses.read parses text already in memory: no file",
    ("grader/learner/phrase_states.py", "stated"): "clauses.read parses a key point's phrase: no file",
    ("grader/learner/interview_cell.py", "read_notebook"): "a solution notebook's interview cell",
}
READS = {"read_text", "read_bytes", "open", "fdopen", "read"}


def plain_reads(path: Path):
    """(function, call) of each read in ``path`` that is not the bounded reader's nor a write."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for fn in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call):
                continue
            f, text = node.func, ast.unparse(node)
            named = (isinstance(f, ast.Name) and f.id == "open") or (
                isinstance(f, ast.Attribute) and (f.attr in READS or (f.attr in ("load", "loads") and
                                                                      ast.unparse(f.value) == "json")))
            if not named or text.startswith("bounded."):
                continue
            modes = [a.value for a in node.args[1:2] if isinstance(a, ast.Constant)]
            if modes and isinstance(modes[0], str) and set(modes[0]) & set("wax"):
                continue  # a write
            yield fn.name, text


def test_no_plain_read_in_the_modules_that_read_learner_files():
    found = []
    for entry in LEARNER_FACING:
        for path in sorted((REPO / entry).glob("*.py")) if (REPO / entry).is_dir() else [REPO / entry]:
            rel = path.relative_to(REPO).as_posix()
            found += [f"{rel}:{fn}: {call}" for fn, call in plain_reads(path) if (rel, fn) not in KIT_READS]
    assert not found, ("read these through grader/loading/bounded.py (or, for a kit file, add it to "
                       "KIT_READS with why):\n" + "\n".join(found))


def test_the_guard_sees_a_plain_read(tmp_path):
    (tmp_path / "m.py").write_text("import json\ndef f(p):\n    return json.loads(p.read_text())\n"
                                   "def g(p):\n    with open(p, 'w') as f:\n        f.write('x')\n")
    assert [fn for fn, _ in plain_reads(tmp_path / "m.py")] == ["f", "f"]


def test_the_notebooks_own_grade_cell_never_waits_on_a_fifo(tmp_path, monkeypatch):
    """`grade_this_notebook` looks through the folder's notebooks for the one to grade."""
    from backprop_traps.grader.notebook_grade import find_notebook
    monkeypatch.chdir(tmp_path)
    os.mkfifo(tmp_path / "01_routing_trap.ipynb")
    os.mkfifo(tmp_path / "copy.ipynb")
    (tmp_path / "other.ipynb").symlink_to("/dev/zero")
    assert find_notebook("routing_trap") in (None, tmp_path / "01_routing_trap.ipynb")


def test_grade_start_force_replaces_a_link_instead_of_writing_through_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "precious.txt").write_text("keep me")
    (tmp_path / "01_routing_trap.ipynb").symlink_to(tmp_path / "precious.txt")
    out = CliRunner().invoke(main, ["start", "routing_trap", "--force"])
    assert out.exit_code == 0, out.output
    assert (tmp_path / "precious.txt").read_text() == "keep me"
    assert not (tmp_path / "01_routing_trap.ipynb").is_symlink()
    assert json.loads((tmp_path / "01_routing_trap.ipynb").read_text())["cells"]
