"""kernels/ says by its folders what each file is (issue 48): a question's kernels at the top
(version 1, and ``<question>_v2.py`` beside it where a fast version exists), shared device code
in common/, what every kernel runs on in runtime/, the benchmark's cases in cases/. Read from
the source: nothing runs, no simulator.
"""
import ast
import re
from pathlib import Path

from backprop_traps import old_names
from backprop_traps.kernels import cases

KERNELS = Path(cases.__file__).resolve().parents[1]
COMMON = {"patterns", "row_reduction", "tiled_matmul"}
RUNTIME = {"device", "simulator_fixes", "launch_limits", "dry_run", "self_check", "solutions"}


def _modules():
    """dotted name (under backprop_traps.kernels) -> path, every .py file of kernels/."""
    found = {}
    for path in sorted(KERNELS.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = path.relative_to(KERNELS).with_suffix("").parts
        found[".".join(p for p in parts if p != "__init__") or "__init__"] = path
    return found


def _imports(path):
    """Every module a file imports, at the top or inside a function (late imports count)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names]  # ``from package import module``
    return names


def test_the_folders_hold_what_their_names_say():
    modules = _modules()
    assert {m.split(".")[1] for m in modules if m.startswith("common.")} == COMMON
    assert {m.split(".")[1] for m in modules if m.startswith("runtime.")} == RUNTIME
    assert not {m for m in modules if m in COMMON | RUNTIME | {"race_checker"}}, "moved: common/, runtime/, grader/sandbox/"


def test_every_version_2_sits_beside_its_version_1_and_each_header_names_the_other():
    for v2 in sorted(KERNELS.glob("*_v2.py")):
        v1 = v2.with_name(v2.name.removesuffix("_v2.py") + ".py")
        assert v1.is_file(), f"{v2.name} has no version 1 beside it"
        head1 = ast.get_docstring(ast.parse(v1.read_text(encoding="utf-8"))) or ""
        head2 = ast.get_docstring(ast.parse(v2.read_text(encoding="utf-8"))) or ""
        assert f"kernels/{v2.name}" in head1, f"{v1.name}'s header does not say where version 2 is"
        assert f"kernels/{v1.name}" in head2, f"{v2.name}'s header does not say where version 1 is"


def test_kernels_import_nothing_from_grader():
    """kernels/ sits below grader/: the cases' references come from runtime/solutions.py, which
    reads the solution notebooks itself (tests/kit/test_import_graph.py checks every depth)."""
    found = {f"{name}: {imported}" for name, path in _modules().items() for imported in _imports(path)
             if imported.split(".")[:2] == ["backprop_traps", "grader"] or imported.split(".")[0] == "grader"}
    assert not found, sorted(found)


def test_no_circle_between_kernel_modules_late_imports_included():
    modules = _modules()
    graph = {name: {i.removeprefix("backprop_traps.kernels.") for i in _imports(path)
                    if i.startswith("backprop_traps.kernels.")} & set(modules) for name, path in modules.items()}
    graph = {name: {d for d in deps if d != name and not name.startswith(d + ".")} for name, deps in graph.items()}
    state, circles = {}, []

    def visit(node, trail):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                circles.append(trail[trail.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert not circles, circles


def test_every_kernel_file_stays_under_about_400_lines():
    long = {name: n for name, path in _modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 410}
    assert not long, long


def test_the_kit_imports_moved_modules_by_their_new_paths():
    """The old paths still import (backprop_traps/old_names.py's MOVED, for a user's own files);
    the kit's own code and documents say the new ones (a line may name an old path beside its
    new one, to document the move)."""
    repo = KERNELS.parent
    moved = "|".join(old.rpartition(".")[2] for old in old_names.MOVED)
    stale = re.compile(rf"backprop_traps\.kernels\.({moved})\b|from backprop_traps\.kernels import [^\n]*\b({moved})\b"
                       rf"|(?<![\w/])kernels/({moved})\.py")
    allowed = {"backprop_traps/old_names.py", "tests/kit/test_old_import_names.py", "tests/kernels/test_kernels_layout.py"}
    offenders = []

    def stale_in(line):
        found = stale.search(line)
        moved_name = found and next(g for g in found.groups() if g)
        return found and old_names.MOVED[f"backprop_traps.kernels.{moved_name}"] not in line

    for folder in ("backprop_traps", "grader", "kernels", "benchmarks", "tests", "docs"):
        for path in sorted((repo / folder).rglob("*")):
            if path.suffix in (".py", ".md") and "__pycache__" not in path.parts and "results" not in path.parts:
                name = str(path.relative_to(repo))
                if name not in allowed:
                    offenders += [f"{name}:{n}" for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                                  if stale_in(line)]
    offenders += [f"README.md:{n}" for n, line in enumerate((repo / "README.md").read_text(encoding="utf-8").splitlines(), 1)
                  if stale_in(line)]
    assert not offenders, offenders
