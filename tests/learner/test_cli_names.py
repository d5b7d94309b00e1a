"""What a learner may type (issue 38, item 7): a question by its number or notebook name, a
notebook without its extension, "did you mean" for ids, subcommands and files, and
`--solution` refused before full marks, with a sentence and nothing copied."""
import shutil

import pytest
from click.testing import CliRunner

from backprop_traps.grader.cli import main
from backprop_traps.grader.commands.names import resolve_question
from backprop_traps.grader.learner.history import History
from backprop_traps.grader.loading.questions import solution_notebooks
from conftest import REPO


def grade(*args):
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("typed", ["15", "015", "15_batchnorm", "15_batchnorm_backward",
                                   "15_batchnorm_backward.ipynb", "batchnorm_backward", "15-batchnorm"])
def test_a_question_by_number_or_notebook_name(typed):
    assert resolve_question(typed, solution_notebooks()) == "batchnorm_backward"


@pytest.mark.parametrize("typed", ["15_routing", "99", "batchnorm", "", "1.5"])
def test_what_names_no_question(typed):
    assert resolve_question(typed, solution_notebooks()) is None


@pytest.mark.parametrize("typed", ["15", "15_batchnorm"])
def test_start_by_number(typed, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = grade("start", typed)
    assert out.exit_code == 0, out.output
    assert (tmp_path / "15_batchnorm_backward.ipynb").is_file()


def test_an_unknown_id_gets_did_you_mean(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for command in (["start", "batchnorm_backwrd"], ["reveal", "batchnorm_backwrd"]):
        out = grade(*command)
        assert out.exit_code == 2, out.output
        assert "Did you mean batchnorm_backward" in out.output and "Traceback" not in out.output
    assert not list(tmp_path.iterdir())


def test_a_subcommand_typo_gets_did_you_mean():
    out = grade("strat", "routing_trap")
    assert out.exit_code == 2 and "Did you mean `grade start`?" in out.output, out.output
    assert "Did you mean `grade list`?" in grade("lsit").output


def test_a_notebook_without_its_extension_is_found(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(REPO / "solutions" / "01_routing_trap.ipynb", tmp_path / "01_routing_trap.ipynb")
    out = grade("01_routing_trap")
    assert out.exit_code == 0 and "Score: 12 / 12" in out.output, out.output
    near = grade("01_routing_trp.ipynb")
    assert near.exit_code == 2 and "Did you mean 01_routing_trap.ipynb?" in near.output, near.output


def test_solution_is_refused_before_full_marks_and_nothing_is_copied(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = grade("start", "19", "--solution")
    assert out.exit_code == 1, out.output
    assert "Not yet" in out.output and "every hidden check passes" in out.output
    assert not list(tmp_path.iterdir()), "nothing copied, not even the stub"
    history = History.load()
    history.record_score("bptt", 11, 16)
    history.save()
    out = grade("start", "bptt", "--solution")
    assert out.exit_code == 1 and "11 / 16 points" in out.output, out.output
    history = History.load()
    history.record_score("bptt", 16, 16)
    history.save()
    out = grade("start", "bptt", "--solution")
    assert out.exit_code == 0, out.output
    assert "Copied the reference solution of bptt to 19_bptt_solution.ipynb" in out.output
    assert "Copied 19_bptt.ipynb" not in out.output
    assert (tmp_path / "19_bptt_solution.ipynb").is_file() and (tmp_path / "19_bptt.ipynb").is_file()
