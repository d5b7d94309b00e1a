"""The checks layout (issue 27): one file per question, or a package holding the same three
files (and, where a question simulates something of its own, a module per such concept: e.g.
training_symptoms' small network and its planted runs, and the data its checks read: its
default seed's runs, ``default_runs.npz``); both load from the kit and from an instructor's own
questions folder."""
from __future__ import annotations

from pathlib import Path

from backprop_traps.grader.checks import checks_source, load_question
from backprop_traps.grader.commands.learner import describe

CHECKS = Path(__file__).resolve().parents[2] / "grader" / "checks"
PACKAGE_FILES = {"__init__.py", "probes.py", "traps.py"}


def test_every_question_is_one_file_or_a_package_of_the_same_three_files_and_more():
    for entry in CHECKS.iterdir():
        if entry.name in ("__init__.py", "__pycache__"):
            continue
        if entry.is_dir():
            files = {p.name for p in entry.iterdir() if p.name != "__pycache__"}
            assert files >= PACKAGE_FILES and all(f.endswith(".py") and not f.startswith("_") or f == "__init__.py"
                                                  or f.endswith(".npz") for f in files), (entry.name, files)
            assert load_question(entry.name).id == entry.name
        else:
            assert entry.suffix == ".py" and not entry.name.startswith("_"), entry.name
            assert not entry.stem.endswith(("_probes", "_traps", "_judge")), entry.name


def test_no_checks_file_passes_about_400_lines():
    sizes = {str(p.relative_to(CHECKS)): len(p.read_text().splitlines()) for p in CHECKS.rglob("*.py")}
    assert max(sizes.values()) <= 400, sorted(sizes.items(), key=lambda kv: -kv[1])[:3]


def test_external_checks_load_as_a_file_or_as_a_package(tmp_path):
    one = tmp_path / "one" / "checks"
    one.mkdir(parents=True)
    (one / "scale_rows.py").write_text(
        'from backprop_traps.grader.engine.question import Question\nQUESTION = Question("scale_rows", "One file")\n')
    package = tmp_path / "many" / "checks" / "scale_rows"
    package.mkdir(parents=True)
    (package / "probes.py").write_text("TITLE = 'A package whose parts import each other'\n")
    (package / "traps.py").write_text("TRAPS = []\n")
    (package / "__init__.py").write_text(
        "from backprop_traps.grader.engine.question import Question\nfrom .probes import TITLE\nfrom .traps import TRAPS\n"
        'QUESTION = Question("scale_rows", TITLE, traps=TRAPS)\n')
    assert load_question("scale_rows", tmp_path / "one").title == "One file"
    assert load_question("scale_rows", tmp_path / "many").title.startswith("A package")
    assert checks_source("scale_rows", tmp_path / "many") == package / "__init__.py"


def test_grade_list_reads_a_packages_title_without_importing_it():
    assert checks_source("routing_trap") == CHECKS / "routing_trap" / "__init__.py"
    title, difficulty = describe("routing_trap", Path("/nonexistent.ipynb"), Path("/nonexistent"))
    assert title == "Max pooling must cache where the max came from" and difficulty == "medium"
