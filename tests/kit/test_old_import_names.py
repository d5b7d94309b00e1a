"""The import names before issue 27: `grader.*` and `kernels.*` are aliases of
`backprop_traps.grader.*` and `backprop_traps.kernels.*` (backprop_traps/old_names.py), the same
module objects, and only where no other project owns the top-level name.

The old names are written out on purpose in this file, which /work/briefs/rename_imports.py
leaves alone; the wheel-level checks (beside another `grader` and `kernels`) are in
test_packaging.py, which imports the old-style cells from here.
"""
import ast
import json
import importlib
import sys
from pathlib import Path

import pytest

import backprop_traps
import backprop_traps.grader.nbgrader_bridge
import backprop_traps.grader.notebook_grade
from backprop_traps import old_names
from conftest import REPO, TESTS

OLD_GRADE_CELL = ("from grader.notebook_grade import grade_this_notebook\n"
                  "grade_this_notebook({question!r})")
"""The "Grade it" cell of a notebook released before the rename."""
OLD_HIDDEN_CHECKS_LINE = "from grader.nbgrader_bridge import run_hidden_checks\n"
NEW_IMPORTS = {"from backprop_traps.grader.notebook_grade import": "from grader.notebook_grade import",
               "from backprop_traps.grader.nbgrader_bridge import": "from grader.nbgrader_bridge import"}


def as_released_before_the_rename(text: str) -> str:
    """A notebook's text with its grade cells' imports as released notebooks have them."""
    for new, old in NEW_IMPORTS.items():
        text = text.replace(new, old)
    return text


def _old(name: str) -> bool:
    return name.split(".")[0] in old_names.OLD_NAMES


@pytest.fixture
def fresh_import_state(monkeypatch):
    """sys.path without the repository and tests/ (there `grader/` and `kernels/` are folders a
    path finder would import as themselves), no old name imported yet, the finder installed;
    all put back afterwards."""
    here = {REPO.resolve(), TESTS.resolve()}
    monkeypatch.setattr(sys, "path", [p for p in sys.path if Path(p or ".").resolve() not in here])
    saved = {name: module for name, module in sys.modules.items() if _old(name)}
    for name in saved:
        del sys.modules[name]
    meta_path = list(sys.meta_path)
    old_names.install()
    importlib.invalidate_caches()
    yield
    sys.meta_path[:] = meta_path
    for name in [n for n in sys.modules if _old(n)]:
        del sys.modules[name]
    sys.modules.update(saved)
    importlib.invalidate_caches()


def test_old_names_are_the_same_module_objects(fresh_import_state):
    from grader.nbgrader_bridge import run_hidden_checks
    namespace = {}
    exec(OLD_GRADE_CELL.split("\n")[0], namespace)  # the released cell's import line, as it is

    assert namespace["grade_this_notebook"] is backprop_traps.grader.notebook_grade.grade_this_notebook
    assert run_hidden_checks is backprop_traps.grader.nbgrader_bridge.run_hidden_checks
    assert sys.modules["grader.notebook_grade"] is backprop_traps.grader.notebook_grade
    assert importlib.import_module("grader") is sys.modules["backprop_traps.grader"]
    limits = importlib.import_module("kernels.runtime.launch_limits")
    assert limits is importlib.import_module("backprop_traps.kernels.runtime.launch_limits")
    # the module keeps its own spec and name: reload, pickling and relative imports see one module
    assert sys.modules["grader"].__spec__.name == "backprop_traps.grader"
    assert limits.__name__ == "backprop_traps.kernels.runtime.launch_limits"


def test_moved_modules_keep_their_old_paths_as_the_same_module_objects(fresh_import_state):
    """Issue 48 split kernels/: a kernel file an earlier ``grade new`` wrote says ``from
    backprop_traps.kernels.device import cuda``. Every old path is the new module itself."""
    for old, new in old_names.MOVED.items():
        assert importlib.util.find_spec(new) is not None, f"{old} points at {new}, which is not there"
    limits = importlib.import_module("backprop_traps.kernels.launch_limits")
    assert limits is importlib.import_module("backprop_traps.kernels.runtime.launch_limits")
    assert limits.__name__ == "backprop_traps.kernels.runtime.launch_limits"
    from backprop_traps.kernels import race_checker  # the attribute form, as ``from kernels import x``
    assert race_checker is importlib.import_module("backprop_traps.grader.sandbox.race_checker")
    assert importlib.import_module("kernels.launch_limits") is limits  # the name before issue 27, too


def test_a_real_top_level_package_wins(fresh_import_state, tmp_path, monkeypatch):
    for name in old_names.OLD_NAMES:
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"OWNER = 'another project: {name}'\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    import grader
    import kernels
    assert grader.OWNER == "another project: grader" and kernels.OWNER == "another project: kernels"
    with pytest.raises(ModuleNotFoundError):  # theirs has no such module, and ours is not mixed in
        importlib.import_module("grader.notebook_grade")
    assert "grader.notebook_grade" not in sys.modules
    assert importlib.import_module("backprop_traps.grader.notebook_grade").__name__ == \
        "backprop_traps.grader.notebook_grade"


def test_an_unknown_old_submodule_is_a_plain_import_error(fresh_import_state):
    with pytest.raises(ImportError):
        importlib.import_module("grader.no_such_module")
    assert importlib.import_module("grader") is sys.modules["backprop_traps.grader"]


def test_install_adds_one_finder_at_the_end():
    before = list(sys.meta_path)
    try:
        old_names.install()
        old_names.install()
        assert sys.meta_path.count(old_names.OldTopLevelNames) == 1
        path_finder = next(i for i, f in enumerate(sys.meta_path) if getattr(f, "__name__", "") == "PathFinder")
        assert sys.meta_path.index(old_names.OldTopLevelNames) > path_finder  # installed packages come first
    finally:
        sys.meta_path[:] = before


def test_what_every_python_process_loads_imports_only_sys():
    """The .pth file imports these two modules at every interpreter start of the environment
    (and in each sandboxed child): nothing at module level but ``sys``, and ``os`` in
    backprop_traps/__init__.py (a source checkout's mapping, issue 45), which site.py itself
    imports before it runs any .pth file, so it costs nothing there."""
    import site
    assert getattr(site, "os", None) is __import__("os")
    for module, allowed in ((backprop_traps, {"sys", "os"}), (old_names, {"sys"})):
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        imported = {a.name for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
                    for a in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module)])}
        assert imported <= allowed, (module.__name__, imported)


def test_the_installed_pth_file_put_the_finder_in_this_interpreter():
    """The README's install is editable (`pip install -e .`): its editable wheel carries
    backprop_traps_old_names.pth as the wheel does (backprop_traps/_build.py)."""
    assert old_names.OldTopLevelNames in sys.meta_path


def test_an_instructors_checks_written_with_the_old_names_load_as_the_kits(fresh_import_state, tmp_path):
    """Checks an instructor wrote before the rename, loaded by path as `grade` loads them: their
    Question is the kit's own class, so the grader accepts it."""
    from backprop_traps.grader.checks import _load_external
    from backprop_traps.grader.engine.question import Question
    source = tmp_path / "scale_rows.py"
    source.write_text('from grader.engine.question import Question\nQUESTION = Question("scale_rows", "Old")\n')
    assert isinstance(_load_external("scale_rows", source).QUESTION, Question)


def _old_imports(source: str) -> list[int]:
    """Line numbers of imports of `grader` or `kernels` (not marked as old on purpose)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    lines = source.splitlines()
    found = []
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
        if any(_old(n) for n in names) and "old import name" not in lines[node.lineno - 1]:
            found.append(node.lineno)
    return found


def test_the_kit_imports_itself_by_its_new_names():
    """Code in the repository says ``backprop_traps.grader``: an old name would still import
    (an alias), but where the repository is on sys.path (pytest, ``python -m`` from the clone)
    it finds the folder grader/ as a second copy of the kit. /work/briefs/rename_imports.py
    rewrites such imports."""
    offenders = []
    for folder in ("grader", "kernels", "benchmarks", "tests"):
        for path in sorted((REPO / folder).rglob("*.py")):
            if path.name != Path(__file__).name:
                found = _old_imports(path.read_text(encoding="utf-8"))
                offenders += [f"{path.relative_to(REPO)}:{n}" for n in found]
    for path in sorted((REPO / "solutions").glob("*.ipynb")) + sorted((REPO / "exercises").glob("*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            lines = "".join(cell["source"]).splitlines()
            code = "\n".join(ln for ln in lines if not ln.lstrip().startswith(("%", "!")))  # magics
            if cell["cell_type"] == "code" and _old_imports(code):
                offenders.append(f"{path.relative_to(REPO)} cell {i}")
    assert not offenders, f"import backprop_traps.grader / backprop_traps.kernels here: {offenders}"


def test_the_pth_line_is_silent_when_the_package_is_gone(tmp_path):
    """Python runs the .pth line at every start-up: an editable install whose source folder
    moved must not print a traceback before every command (it did, once)."""
    import subprocess
    from backprop_traps._build import PTH_TEXT
    site = tmp_path / "site"
    site.mkdir()
    (site / "backprop_traps_old_names.pth").write_text(PTH_TEXT, encoding="utf-8")
    run = subprocess.run([sys.executable, "-I", "-S", "-c", f"import site; site.addsitedir({str(site)!r}); print('ok')"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert run.stdout.strip() == "ok" and "Traceback" not in run.stderr, run.stderr
