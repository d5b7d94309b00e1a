"""The `grade` command through click's CliRunner: output forms and exit codes (CONTRACT.md)."""
import json
from pathlib import Path

from click.testing import CliRunner

from backprop_traps.grader.cli import main
from conftest import REPO

SOLUTION = str(REPO / "solutions" / "01_routing_trap.ipynb")
STUB = str(REPO / "exercises" / "01_routing_trap.ipynb")
KEYS = {"submission", "question", "score", "max_score", "error", "tests"}
TEST_KEYS = {"name", "points", "max_points", "passed", "trap", "feedback"}


def invoke(*args):
    return CliRunner().invoke(main, list(args))


def test_json_for_one_submission_is_one_object():
    out = invoke(SOLUTION, "--json")
    assert out.exit_code == 0
    doc = json.loads(out.stdout)
    assert set(doc) == KEYS | {"seed", "isolation"}  # the README promises both (issue 24)
    assert doc["score"] == doc["max_score"] == 12.0 and doc["error"] is None
    assert doc["seed"] == 1234 and json.loads(invoke(SOLUTION, "--json", "--seed", "7").stdout)["seed"] == 7
    assert all(set(t) == TEST_KEYS for t in doc["tests"])


def test_json_for_several_is_a_list_and_errors_still_exit_zero(tmp_path):
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{")
    out = invoke("--json", SOLUTION, str(bad), "--question", "routing_trap")
    assert out.exit_code == 0
    docs = json.loads(out.stdout)
    assert [d["score"] for d in docs] == [12.0, 0]
    assert docs[1]["error"] and docs[1]["max_score"] == 12.0


def test_table_names_checks_and_prints_the_seed():
    out = invoke(STUB, "--seed", "5")
    assert out.exit_code == 0
    assert "FAIL" in out.stdout and "not implemented yet" in out.stdout
    assert "Score: 0 / 12" in out.stdout and "--seed 5" in out.stdout
    assert "\x1b[" not in out.stdout  # plain when not a terminal


def test_usage_errors_exit_2():
    assert invoke().exit_code in (0, 2)  # bare `grade` shows help
    assert invoke("check").exit_code == 2
    assert invoke(SOLUTION, "--seed", "x").exit_code == 2
    assert invoke(SOLUTION, "--no-such-flag").exit_code == 2


def test_help_lists_subcommands():
    out = invoke("--help")
    assert out.exit_code == 0 and "check" in out.stdout


def test_help_shows_how_to_grade_with_the_checks_options():
    out = invoke("--help")
    assert out.exit_code == 0 and " SUBMISSION... [OPTIONS]" in out.stdout.splitlines()[0]
    grading = out.stdout.split("Grading (")[1].split("Commands:")[0]
    assert all(flag in grading for flag in ("--json", "--hint", "--seed", "--question", "--call-timeout"))
    assert "grade start routing_trap" in out.stdout


def test_version():
    from importlib.metadata import version
    out = invoke("--version")
    assert out.exit_code == 0 and version("backprop-traps") in out.stdout


def test_a_missing_path_or_a_folder_is_a_usage_error_in_one_sentence(tmp_path):
    for args in ([str(tmp_path / "nope.ipynb")], [str(tmp_path)], [SOLUTION, str(tmp_path), "--json"]):
        out = invoke(*args)
        assert out.exit_code == 2, (args, out.output)
        assert out.stdout == "" and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "does not exist" in invoke(str(tmp_path / "nope.ipynb")).stderr
    assert "is a folder" in invoke(str(tmp_path)).stderr


def test_release_check_reports_a_stale_stub(tmp_path, monkeypatch):
    import shutil
    for folder in ("solutions", "exercises"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    monkeypatch.setenv("BACKPROP_TRAPS_QUESTIONS", str(tmp_path))
    assert invoke("release", "--check").exit_code == 0
    stub = tmp_path / "exercises" / "01_routing_trap.ipynb"
    stub.write_text(stub.read_text().replace("roughly", "about"))
    out = invoke("release", "--check")
    assert out.exit_code == 1 and "stale" in out.stdout and "routing_trap" in out.stdout
    assert invoke("release").exit_code == 0
    assert invoke("release", "--check").exit_code == 0


def test_release_check_reports_stale_shipped_runs_and_release_makes_them_again(tmp_path, monkeypatch):
    """training_symptoms' runs for the default seed, shipped with the kit, are made by release
    like the exercises, and `release --check` (CI) fails while they are not this code's."""
    import shutil
    from backprop_traps.grader.checks.training_symptoms import shipped
    monkeypatch.setattr(shipped, "FILE", Path(shutil.copy(shipped.FILE, tmp_path / "default_runs.npz")))
    monkeypatch.setattr(shipped, "digest", lambda: "changed-code")
    shipped._read.cache_clear()
    try:
        out = invoke("release", "--check")
        assert out.exit_code == 1 and "training_symptoms' shipped runs" in out.stdout, out.output
        assert "shipped runs" in invoke("release").stdout
        assert invoke("release", "--check").exit_code == 0
        from backprop_traps.grader.checks.training_symptoms import runs
        assert runs.shipped_trace(1234, "healthy", 0) is not None
    finally:
        shipped._read.cache_clear()
