"""The learner's loop, played end to end: a newcomer installs the kit, lists the questions,
starts one, fills it in and grades it; a learner with a trap answer asks for hints.

The newcomer here runs the real `grade` console script of the environment the tests run in,
from an empty folder; tests/kit/test_packaging.py plays the same loop from a wheel installed in a
fresh virtual environment.
"""
import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import REPO, solution_source
from backprop_traps.grader.cli import main
from backprop_traps.grader.learner.history import FILENAME
from test_hints import solution_lines

STUB = "01_routing_trap.ipynb"


def fill_from_solution(stub_path):
    """Copy the solution cells' sources into the stub's solution cells (matched by grade_id)."""
    solution = json.loads((REPO / "solutions" / STUB).read_text())
    answers = {c["metadata"]["nbgrader"]["grade_id"]: c["source"] for c in solution["cells"]
               if c["metadata"].get("nbgrader", {}).get("solution")}
    nb = json.loads(stub_path.read_text())
    for cell in nb["cells"]:
        nbg = cell["metadata"].get("nbgrader", {})
        if nbg.get("solution"):
            cell["source"] = answers[nbg["grade_id"]]
    stub_path.write_text(json.dumps(nb, indent=1))


@pytest.fixture
def installed_grade():
    """The `grade` console script that installing this repo put beside this Python."""
    script = Path(sysconfig.get_path("scripts")) / "grade"
    if not script.is_file():
        script = Path(sys.executable).parent / "grade"
    assert script.is_file(), "install the kit first: pip install -e '.[test]'"
    return script


def test_newcomer_installs_lists_starts_fills_and_gets_full_marks(installed_grade, tmp_path):
    work = tmp_path / "practice"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "BACKPROP_TRAPS_QUESTIONS"}

    def grade(*args):
        return subprocess.run([str(installed_grade), *args], cwd=work, env=env, capture_output=True,
                              text=True, timeout=120)

    listing = grade("list")
    assert listing.returncode == 0, listing.stderr
    assert all(q in listing.stdout for q in ("routing_trap", "per_step_update_trap", "vram_trap", "softmax_ce"))
    assert "Max pooling must cache where the max came from" in listing.stdout
    assert "medium" in listing.stdout and "not graded" in listing.stdout
    assert "grade start routing_trap" in listing.stdout and "exercises/" not in listing.stdout

    started = grade("start", "routing_trap")
    assert started.returncode == 0, started.stderr
    assert f"grade {STUB}" in started.stdout
    fill_from_solution(work / STUB)

    graded = grade(STUB)
    assert graded.returncode == 0, graded.stderr
    assert "Score: 12 / 12" in graded.stdout and "FAIL" not in graded.stdout
    assert "hidden checks: 8 of 8 pass, visible tests: 3 of 3 pass" in graded.stdout
    assert "best 12/12" in grade("list").stdout

    again = grade("start", "routing_trap")  # the work is kept
    assert again.returncode == 1 and "--force" in again.stderr
    assert "Score: 12 / 12" in grade(STUB).stdout


def test_trap_answer_gets_three_different_hints_and_no_solution_code(tmp_path, monkeypatch, answer_file):
    path = str(answer_file("routing_trap", "lost_overlap"))
    monkeypatch.chdir(tmp_path)
    hints = []
    for number in (1, 2, 3):
        out = CliRunner().invoke(main, [path, "--hint"])
        assert out.exit_code == 0
        found = re.search(rf'Hint {number} of 3 for "max-pool backward: overlapping windows[^\n]*\n(.*)', out.stdout, re.S)
        assert found, out.stdout
        hints.append(found.group(1).split("(`--hint` again")[0].strip())
    assert len(set(hints)) == 3
    code = solution_lines("routing_trap")
    for hint in hints:
        assert not [ln for ln in code if ln in hint], hint
    fourth = CliRunner().invoke(main, [path, "--hint"])
    assert "seen all 3 hints" in fourth.stdout


def test_feedback_shows_where_it_differs_and_the_smallest_failing_input(answer_file, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # grading keeps its history in the current folder
    out = CliRunner().invoke(main, [str(answer_file("routing_trap", "lost_overlap"))])
    assert "[trap: lost-overlap]" in out.stdout
    assert "differs only at inputs that won more than one window" in out.stdout
    assert "The smallest input where yours is still wrong:" in out.stdout
    assert re.search(r"x\[0, 0\] =\n\s+\[\[", out.stdout)  # a small plane, printed in 2-D
    tie = CliRunner().invoke(main, [str(answer_file("routing_trap", "tie_order"))])
    assert "differs only in windows whose maximum is tied" in tie.stdout


def test_visible_tests_passing_never_reads_as_done(tmp_path, monkeypatch):
    nb = json.loads((REPO / "solutions" / STUB).read_text())
    # A backward that only handles square planes: the visible tests (all square) cannot see it.
    nb["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                        "source": "_backward = maxpool2d_backward\n\n"
                                  "def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):\n"
                                  "    if input_shape[2] != input_shape[3]:\n"
                                  "        return np.zeros(input_shape)\n"
                                  "    return _backward(dout, argmax, input_shape, kernel_size, stride)\n"})
    path = tmp_path / "square_only.ipynb"
    path.write_text(json.dumps(nb))
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(main, [str(path)])
    assert "hidden checks: 6 of 8 pass, visible tests: 3 of 3 pass" in out.stdout
    assert "Every visible test passes, but 2 hidden checks fail" in out.stdout
    assert "The smallest input where yours is still wrong" in out.stdout  # a 3 x 5 plane, say
    doc = json.loads(CliRunner().invoke(main, [str(path), "--json"]).stdout)
    assert set(doc) == {"submission", "question", "score", "max_score", "error", "tests", "seed",
                        "isolation"}  # the sandbox layers that ran (README)


def test_start_copies_the_stub_and_keeps_work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "deep" / "folder"
    out = CliRunner().invoke(main, ["start", "routing_trap", str(target)])
    assert out.exit_code == 0 and (target / STUB).read_bytes() == (REPO / "exercises" / STUB).read_bytes()
    (target / STUB).write_text("my work")
    assert CliRunner().invoke(main, ["start", "routing_trap", str(target)]).exit_code == 1
    assert (target / STUB).read_text() == "my work"
    assert CliRunner().invoke(main, ["start", "routing_trap", str(target), "--force"]).exit_code == 0
    assert (target / STUB).read_text() != "my work"
    unknown = CliRunner().invoke(main, ["start", "no_such_trap"])
    assert unknown.exit_code == 2 and "routing_trap" in unknown.output


def test_list_falls_back_to_the_notebooks_heading(tmp_path):
    (tmp_path / "solutions").mkdir()
    text = (REPO / "solutions" / STUB).read_text()
    (tmp_path / "solutions" / "07_fresh_trap.ipynb").write_text(text)
    out = CliRunner().invoke(main, ["list", "--questions-dir", str(tmp_path)])
    assert out.exit_code == 0 and "fresh_trap" in out.stdout
    assert "The routing trap: max pooling must remember where the max came from" in out.stdout


def test_grade_this_notebook_from_its_folder(tmp_path, monkeypatch, capsys):
    from backprop_traps.grader.notebook_grade import grade_this_notebook
    monkeypatch.chdir(tmp_path)
    grade_this_notebook("routing_trap")
    assert "Could not tell which file" in capsys.readouterr().out
    CliRunner().invoke(main, ["start", "routing_trap"])
    fill_from_solution(tmp_path / STUB)
    grade_this_notebook("routing_trap")
    out = capsys.readouterr().out
    assert f"routing_trap  ·  {STUB}" in out and "Score: 12 / 12" in out
    assert (tmp_path / FILENAME).exists()


def test_kit_notebook_found_by_the_cells_this_kernel_ran(tmp_path, monkeypatch):
    from backprop_traps.grader import notebook_grade
    monkeypatch.chdir(tmp_path)
    ran = {cell.split("\n", 1)[1].strip() for cell in solution_source("routing_trap").split("# --- cell ")[1:]}
    monkeypatch.setattr(notebook_grade, "executed_cells", lambda: ran)
    assert notebook_grade.find_notebook("routing_trap") == REPO / "solutions" / STUB
    monkeypatch.setattr(notebook_grade, "executed_cells", lambda: set(list(ran)[1:]))
    assert notebook_grade.find_notebook("routing_trap") is None


def test_solution_notebook_grades_itself_to_full_marks_in_a_kernel(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    from backprop_traps.grader.authoring.notebook_client import notebook_client
    nb = nbformat.read(str(REPO / "solutions" / STUB), as_version=4)
    last = nb.cells[-1]
    assert "grade_this_notebook" in last.source and "demo" in last.metadata.get("tags", [])
    notebook_client(nb, timeout=180, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    text = "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in nb.cells[-1].outputs)
    assert "Score: 12 / 12" in text, text


def test_readme_first_screen_shows_the_loop():
    lines = (REPO / "README.md").read_text().splitlines()[:45]
    first_block = lines.index("```bash")
    assert "pip install -e '.[jupyter]'" in lines[first_block + 1] and "pytest" in lines[first_block + 2]
    screen = "\n".join(lines)
    for command in ("grade list", "grade start routing_trap", "grade 01_routing_trap.ipynb --hint"):
        assert command in screen


def test_notebook_found_from_jupyters_session_name_relative_to_the_server_root(tmp_path, monkeypatch):
    from backprop_traps.grader import notebook_grade
    (tmp_path / "course" / "week1").mkdir(parents=True)
    mine = tmp_path / "course" / "week1" / "renamed.ipynb"
    mine.write_text("{}")
    monkeypatch.chdir(mine.parent)  # Jupyter runs the kernel in the notebook's folder
    monkeypatch.setenv("JPY_SESSION_NAME", "course/week1/renamed.ipynb")  # relative to the server root
    assert notebook_grade.find_notebook().resolve() == mine.resolve()
