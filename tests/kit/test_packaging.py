"""The kit as a package: what the wheel carries, the contract kept in the repository, and the
learner's loop played from a wheel installed in a fresh virtual environment.

The wheel tests are marked ``packaging``: they build the wheel, make one virtual environment
that inherits nothing (no system site-packages, no PYTHONPATH), install the wheel there with
its dependencies (numpy, numba, numba-cuda, nbgrader with JupyterLab, matplotlib, ...: about
120 packages, 190 MB of wheels, 780 MB installed; downloaded from the package index the first
time, from pip's cache after that), then play the loop from an empty folder. With a warm cache
they take about 3.5 minutes on a busy 2-core machine, and remove the environment when done.
Leave them out with ``python -m pytest -m "not packaging"``.
"""
import ast
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO

STUB = "01_routing_trap.ipynb"
SHARED_CONTRACT = REPO.parent / "shared" / "CONTRACT.md"
# What the build needs is the repository less what it does not ship (nor would want copied).
NOT_BUILT = shutil.ignore_patterns(".git", "tests", "benchmarks", "build", "dist", "*.egg-info", "__pycache__",
                                   ".pytest_cache", ".benchmarks", ".venv", "venv", ".ipynb_checkpoints",
                                   ".backprop_traps_history.json", ".whl", ".gl")


def _toml():
    tomllib = pytest.importorskip("tomllib")
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def test_every_package_folder_is_in_the_wheel_list():
    """A subpackage missing from pyproject.toml's list is missing from the wheel, and only an
    installed kit would notice."""
    listed = set(_toml()["tool"]["setuptools"]["packages"])
    on_disk = {".".join(("backprop_traps",) + p.parent.relative_to(REPO).parts)
               for p in (REPO / "grader").rglob("*.py") if "__pycache__" not in p.parts}
    on_disk |= {".".join(("backprop_traps",) + p.parent.relative_to(REPO).parts)
                for p in (REPO / "kernels").rglob("*.py") if "__pycache__" not in p.parts}
    on_disk |= {"backprop_traps"}
    assert on_disk <= listed, f"add to [tool.setuptools] packages: {sorted(on_disk - listed)}"


def test_contract_is_in_the_repository_and_in_step_with_the_shared_one():
    ours = (REPO / "docs" / "contract.md").read_text(encoding="utf-8")
    assert "## `grade --json`" in ours
    if not SHARED_CONTRACT.is_file():
        pytest.skip("no ../shared/CONTRACT.md beside this clone to compare with")
    assert ours == SHARED_CONTRACT.read_text(encoding="utf-8"), \
        "docs/contract.md differs from ../shared/CONTRACT.md: copy the shared one over it"


def test_nothing_points_outside_the_repository():
    texts = [REPO / "README.md", REPO / "pyproject.toml", *sorted((REPO / "docs").rglob("*.md")),
             *sorted((REPO / "grader").rglob("*.py"))]
    outside = [str(p.relative_to(REPO)) for p in texts if "../shared" in p.read_text(encoding="utf-8")]
    assert not outside, f"these point at ../shared, outside the repository: {outside}"


def _clean_env(venv: Path) -> dict:
    """This environment's, less whatever would let the fresh one see this one's packages or kit."""
    drop = {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "VIRTUAL_ENV",
            "BACKPROP_TRAPS_QUESTIONS", "NUMBA_ENABLE_CUDASIM", "__PYVENV_LAUNCHER__"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(PYTHONNOUSERSITE="1", VIRTUAL_ENV=str(venv), NO_COLOR="1",
               PATH=os.pathsep.join([str(venv / "bin"), os.environ.get("PATH", "")]))
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(wheel, venv, env): the wheel built from a copy of this repository, installed (not
    editable) with its dependencies in a fresh virtual environment."""
    base = tmp_path_factory.mktemp("packaging")
    source, dist, venv = base / "source", base / "dist", base / "venv"
    shutil.copytree(REPO, source, ignore=NOT_BUILT)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    env = _clean_env(venv)
    python = str(venv / "bin" / "python")

    def pip(*args, timeout):
        done = subprocess.run([python, "-m", "pip", "--disable-pip-version-check", *args], env=env,
                              cwd=base, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    pip("wheel", "-q", "--no-deps", "-w", str(dist), str(source), timeout=600)
    wheel, = dist.glob("backprop_traps-*.whl")
    pip("install", "-q", str(wheel), timeout=1800)
    yield wheel, venv, env
    shutil.rmtree(base, ignore_errors=True)  # about 800 MB: pytest would keep three runs' worth


@pytest.mark.packaging
def test_wheel_carries_the_questions_and_nothing_else(installed):
    wheel, _, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    solutions = sorted(p.name for p in (REPO / "solutions").glob("*.ipynb"))
    kit = "backprop_traps/grader"  # one top-level name, backprop_traps (issue 27)
    assert solutions and all(f"{kit}/content/solutions/{n}" in names for n in solutions)
    assert all(f"{kit}/content/exercises/{n}" in names for n in solutions)
    for question in ("routing_trap", "softmax_ce", "memory_budget"):
        assert f"backprop_traps/kernels/{question}.py" in names
        assert f"backprop_traps/kernels/cases/{question}.py" in names  # the self-check's tiny cases
    assert f"{kit}/checks/softmax_ce.py" in names  # one file, and a package of three (issue 27)
    assert {f"{kit}/checks/routing_trap/{part}.py" for part in ("__init__", "probes", "traps")} <= names
    assert f"{kit}/content/docs/contract.md" in names
    assert f"{kit}/checks/training_symptoms/default_runs.npz" in names  # its default seed's runs, trained once
    assert f"{kit}/content/docs/interview_corpus/adamw_step.md" in names  # validate's key-point proofs
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "backprop_traps/old_names.py" in names and "backprop_traps/_build.py" not in names
    strays = sorted(n for n in names if n.split("/")[0] != "backprop_traps" and ".dist-info/" not in n)
    assert strays == ["backprop_traps_old_names.pth"]  # no grader/, kernels/, solutions/, tests/ at the top
    assert not any("__pycache__" in n for n in names)


@pytest.mark.packaging
def test_installed_wheel_runs_the_learners_loop_from_an_empty_folder(installed, tmp_path):
    _, venv, env = installed
    work = tmp_path / "practice"
    work.mkdir()

    def grade(*args):
        return subprocess.run([str(venv / "bin" / "grade"), *args], cwd=work, env=env,
                              capture_output=True, text=True, timeout=300)

    version = grade("--version")
    assert version.returncode == 0 and _toml()["project"]["version"] in version.stdout, version.stderr

    listing = grade("list")
    assert listing.returncode == 0, listing.stderr
    assert "No questions found" not in listing.stdout and "grade start routing_trap" in listing.stdout
    assert "exercises/" not in listing.stdout  # the command to start, never a stub inside the kit

    started = grade("start", "routing_trap")
    assert started.returncode == 0, started.stderr
    from test_learner_loop import fill_from_solution
    fill_from_solution(work / STUB)

    graded = grade(STUB)
    assert graded.returncode == 0, graded.stderr
    assert "Score: 12 / 12" in graded.stdout and "FAIL" not in graded.stdout, graded.stdout
    assert "hidden checks: 8 of 8 pass, visible tests: 3 of 3 pass" in graded.stdout, graded.stdout
    assert "best 12/12" in grade("list").stdout
    assert "kernels/routing_trap.py" in graded.stdout  # full marks say where the kernels are
    revealed = grade("reveal", "routing_trap")  # the solution's derivation is package data
    assert revealed.returncode == 0 and "step 1 of" in revealed.stdout, revealed.stderr
    copied = grade("start", "routing_trap", "--solution")  # so are the solution and the kernels
    assert copied.returncode == 0 and (work / "routing_trap_kernels.py").is_file(), copied.stdout + copied.stderr

    spoken = subprocess.run([str(venv / "bin" / "grade"), "interview", "routing_trap", "--answer", "-"],
                            cwd=work, env=env, capture_output=True, text=True, timeout=120,
                            input="only the winner gets the gradient, so save the argmax index")
    assert spoken.returncode == 0 and "2/5 key points" in spoken.stdout, spoken.stderr
    row = next(line for line in grade("list").stdout.splitlines() if " routing_trap " in line)
    assert "12/12, best 12/12" in row and " 2/5 " in row

    due = grade("next")  # spaced review: fsrs is a dependency, the cards are in the history
    assert due.returncode == 0 and "Coming up: " in due.stdout and "routing_trap" in due.stdout, due.stderr
    mock = subprocess.run([str(venv / "bin" / "grade"), "mock", "softmax_ce", "--minutes", "1"], cwd=work,
                          env=env, capture_output=True, text=True, timeout=300, input="")
    assert mock.returncode == 0 and "Mock over" in mock.stdout and "Code: 0/" in mock.stdout, mock.stderr
    plotted = grade("progress", "--plot", "progress.png")  # matplotlib, a dependency
    assert plotted.returncode == 0 and plotted.stdout.startswith("1/"), plotted.stderr
    assert "questions at full marks" in plotted.stdout
    assert (work / "progress.png").read_bytes()[:4] == b"\x89PNG"

    doc = json.loads(grade(STUB, "--json", "--seed", "7").stdout)
    assert doc["score"] == doc["max_score"] == 12.0 and doc["seed"] == 7
    missing = grade("no_such_file.ipynb")
    assert missing.returncode == 2 and "does not exist" in missing.stderr


@pytest.mark.packaging
def test_installed_kernels_check_themselves_outside_the_repository(installed, tmp_path):
    """``python -m backprop_traps.kernels.<id>`` from the wheel, in an empty folder (issue 34): the
    tiny cases travel in the package (kernels/cases/), and nothing under kernels/ needs benchmarks/."""
    _, venv, env = installed
    env = {**env, "NUMBA_ENABLE_CUDASIM": "1"}  # the same pass a machine with no driver picks by itself
    for question in ("straight_through", "vram_trap", "training_symptoms"):  # the last launches 21's kernels too
        done = subprocess.run([str(venv / "bin" / "python"), "-m", f"backprop_traps.kernels.{question}"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert "the Numba CUDA simulator" in done.stdout and "FAIL" not in done.stdout
        assert done.stdout.count(" ok ") >= 4, done.stdout
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import backprop_traps.kernels.cases as c; "
                            "print(c.__file__)"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert str(venv) in where.stdout and str(REPO) not in where.stdout, where.stdout + where.stderr


@pytest.mark.packaging
def test_installed_wheel_has_what_every_notebook_imports(installed):
    """Run All in any shipped notebook does not stop at an import: the base install has every
    module a code cell imports at its top level (an optional `try: import torch` is not one)."""
    _, venv, env = installed
    wanted = set()
    for notebook in sorted((REPO / "solutions").glob("*.ipynb")):
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            try:
                tree = ast.parse("\n".join(ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))))
            except SyntaxError:
                continue
            for node in tree.body:  # what Run All imports; not `try: import torch`, not in a function
                if isinstance(node, ast.Import):
                    wanted |= {a.name for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    wanted.add(node.module)
    assert {"numpy", "matplotlib.pyplot"} <= wanted
    script = "import importlib, sys\nfor m in sys.argv[1:]: importlib.import_module(m)\n"
    done = subprocess.run([str(venv / "bin" / "python"), "-c", script, *sorted(wanted)], env=env,
                          cwd=venv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    kernel = subprocess.run([str(venv / "bin" / "python"), "-c", "import ipykernel, jupyterlab"], env=env,
                            cwd=venv, capture_output=True, text=True, timeout=120)
    assert kernel.returncode == 0, kernel.stderr[-2000:]


@pytest.mark.packaging
def test_learner_code_cannot_read_the_installed_kit(installed, tmp_path):
    """Installed, the solutions, hidden checks and kernels live in site-packages: a submission
    that could read any of them refuses to load (score 0); hidden from it, it scores 12 / 12."""
    _, venv, env = installed
    where = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import backprop_traps; print(backprop_traps.__file__)"],
                           env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
                           check=True).stdout.strip()
    site = Path(where).parent.parent
    ours = site / "backprop_traps"
    kit = [ours / "grader" / "content" / "solutions" / STUB, ours / "kernels" / "routing_trap.py",
           ours / "grader" / "checks" / "routing_trap" / "__init__.py", ours / "grader" / "content" / "exercises" / STUB]
    assert all(p.is_file() for p in kit)
    from conftest import solution_source

    def score_if_unreadable(paths):
        probe = ("# question: routing_trap\n"
                 f"for _path in {[str(p) for p in paths]!r}:\n"
                 "    try:\n        open(_path, 'rb').read(1)\n    except OSError:\n        continue\n"
                 "    raise RuntimeError('read ' + _path)\n\n" + solution_source("routing_trap"))
        answer = tmp_path / "probe.py"
        answer.write_text(probe)
        graded = subprocess.run([str(venv / "bin" / "grade"), str(answer), "--json"], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=300)
        doc = json.loads(graded.stdout)
        return doc["score"], [t["feedback"] for t in doc["tests"]][:1]

    score, feedback = score_if_unreadable(kit)
    assert score == 12.0, feedback
    numpy = site / "numpy" / "__init__.py"  # the control: a package learner code must read
    assert score_if_unreadable([numpy])[0] == 0.0


@pytest.mark.packaging
def test_the_shipped_solution_graded_by_its_path_inside_the_package(installed, tmp_path):
    """Issue 51, item 2: `grade <site-packages>/backprop_traps/grader/content/solutions/...` lies
    under the kit's hidden tree; it is graded with the same sandbox layers as a copy elsewhere
    (it lost bubblewrap, then scored 0 with BUG lines) and gets full marks."""
    _, venv, env = installed
    where = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import backprop_traps; print(backprop_traps.__file__)"],
                           env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
                           check=True).stdout.strip()
    inside = Path(where).parent / "grader" / "content" / "solutions" / STUB
    outside = tmp_path / STUB
    shutil.copy(inside, outside)

    def graded(path):
        done = subprocess.run([str(venv / "bin" / "grade"), str(path), "--json"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    there, here = graded(inside), graded(outside)
    assert there["error"] is None and there["score"] == there["max_score"] == 12.0, there
    assert there["isolation"] == here["isolation"], (there["isolation"], here["isolation"])


@pytest.mark.packaging
def test_installed_beside_another_projects_grader_and_kernels(installed, tmp_path):
    """The kit owns one top-level name, backprop_traps (issue 27). Another project's ``kernels``
    (Hugging Face's kernel hub has that name) and ``grader`` in the same site-packages import as
    themselves, and the kit works beside them. Without them, a notebook released before the
    rename still grades from its own cells (old import name: ``from grader.notebook_grade``)."""
    from test_learner_loop import fill_from_solution
    from test_old_import_names import OLD_GRADE_CELL, OLD_HIDDEN_CHECKS_LINE, as_released_before_the_rename
    _, venv, env = installed
    python, grade = str(venv / "bin" / "python"), str(venv / "bin" / "grade")
    work = tmp_path / "practice"
    work.mkdir()

    def run(*args):
        return subprocess.run(args, cwd=work, env=env, capture_output=True, text=True, timeout=300)

    site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    assert run(grade, "start", "routing_trap").returncode == 0
    fill_from_solution(work / STUB)
    (work / STUB).write_text(as_released_before_the_rename((work / STUB).read_text()))
    assert "from grader.notebook_grade import" in (work / STUB).read_text()  # the old import name

    theirs = [site / "kernels", site / "grader"]
    try:
        for folder in theirs:
            folder.mkdir()
            (folder / "__init__.py").write_text(f"OWNER = 'another project: {folder.name}'\n")
        probe = run(python, "-c", "import grader, kernels, backprop_traps.grader.cli\n"  # theirs: old import name
                                  "import backprop_traps.grader.sandbox.race_checker\n"
                                  "print(grader.OWNER, kernels.OWNER, sep='|')")
        assert probe.returncode == 0, probe.stderr[-2000:]
        assert probe.stdout.strip() == "another project: grader|another project: kernels"
        beside = run(grade, STUB)
        assert "Score: 12 / 12" in beside.stdout, beside.stdout + beside.stderr
    finally:
        for folder in theirs:
            shutil.rmtree(folder, ignore_errors=True)

    old_cells = (OLD_HIDDEN_CHECKS_LINE + "run_hidden_checks('routing_trap', globals())\n"
                 + OLD_GRADE_CELL.format(question="routing_trap"))
    released = run(python, "-c", old_cells)
    assert released.returncode == 0, released.stderr[-2000:]
    assert "Score: 12 / 12" in released.stdout, released.stdout
