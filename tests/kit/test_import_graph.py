"""The structure has no circles (issue 48 item 5): the import graph of grader/, read with ast
from the source (module-level and function-level imports alike: a late import closes a circle
as surely as one at the top), has no cycle; learner/ is built on by authoring/, never the other
way; and nothing in kernels/ imports the grader at all: not at the top, not inside a function,
not under ``if __name__ == "__main__":``, not by name through importlib (the kernels' references
come from kernels/runtime/solutions.py, which reads the solution notebooks itself).

An arrow goes from a module to the module an import names: ``from backprop_traps.grader.engine
import context`` to grader/engine/context.py, ``from backprop_traps.grader.engine.question import
Fail`` to grader/engine/question.py, ``from backprop_traps.grader import engine`` to
grader/engine/__init__.py (a package's ``__init__`` counts where it is named itself)."""
import ast
import graphlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PREFIX = "backprop_traps."


def _modules(folder: str) -> dict[str, Path]:
    """{dotted name: file} for every module under ``folder`` (``grader.engine.context``)."""
    found = {}
    for path in sorted((REPO / folder).rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imported(name: str, path: Path, among: dict) -> list[tuple[str, int]]:
    """(module imported, line) for every import in the file, at any depth, relative imports
    resolved, the package prefix dropped: ``from X import y`` is ``X.y`` where that is a module
    in ``among``, else ``X``; names outside ``among`` are kept as written (numpy, json)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = []
    for node in _nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(_short(alias.name), node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                kept = package[:len(package) - node.level + 1]
                base = ".".join(kept + ([node.module] if node.module else []))
            else:
                base = _short(node.module or "")
            found += [(f"{base}.{alias.name}" if f"{base}.{alias.name}" in among else base, node.lineno)
                      for alias in node.names]
    return found


def _nodes(tree: ast.AST):
    """Every node at any depth, but for a script's ``if __name__ == "__main__":`` block: it runs
    only as a script (a kernel file's launcher validates against the solution, as llm.c's do),
    never when the module is imported."""
    for node in ast.iter_child_nodes(tree):
        test = getattr(node, "test", None) if isinstance(node, ast.If) else None
        if (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
                and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)):
            continue
        yield node
        yield from _nodes(node)


def _short(name: str) -> str:
    return name[len(PREFIX):] if name.startswith(PREFIX) else name


def _graph(modules: dict[str, Path]) -> dict[str, dict[str, int]]:
    """{module: {module of ``modules`` it imports: the first line that does}}."""
    graph = {}
    for name, path in modules.items():
        arrows: dict[str, int] = {}
        for target, line in _imported(name, path, modules):
            if target in modules and target != name:
                arrows.setdefault(target, line)
        graph[name] = arrows
    return graph


GRADER = _modules("grader")
GRAPH = _graph(GRADER)


def test_the_graph_is_read_at_every_depth():
    # a function-level import is an arrow too (the circles of issue 48 were all closed by one)
    assert "grader.engine.search_budget" in GRAPH["grader.engine.feedback"]
    assert "grader.engine.sentences" in GRAPH["grader.engine.question"]
    assert len(GRAPH) > 200 and sum(map(len, GRAPH.values())) > 500


def test_no_module_of_the_grader_imports_itself_back_in_a_circle():
    try:
        graphlib.TopologicalSorter(GRAPH).prepare()
    except graphlib.CycleError as e:
        cycle = e.args[1]
        arrows = [f"{a} -> {b} (line {GRAPH[a][b]})" for a, b in zip(cycle, cycle[1:])]
        pytest.fail("an import circle: " + "; ".join(arrows) + ". Move the part both need into a "
                    "module of its own (see grader/engine/sentences.py).")


def test_the_learner_room_never_imports_authoring():
    """authoring/ (validate, release, proofs) builds on learner/ (key points, the interview cell,
    the derivation): the learner's path must not load the instructor's tools."""
    back = [f"{a} -> {b} (line {line})" for a, arrows in GRAPH.items() if a.startswith("grader.learner")
            for b, line in arrows.items() if b.startswith("grader.authoring")]
    assert not back, back


DYNAMIC_IMPORTS = {"import_module", "__import__", "find_spec", "run_module"}


def _grader_imports(path: Path) -> list[str]:
    """``line: module`` for every import of the grader in a file: at any depth, ``__main__``
    blocks included, and names handed to importlib as strings."""
    def grader(name: str) -> bool:
        return _short(name).split(".")[0] == "grader"

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: {a.name}" for a in node.names if grader(a.name)]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            if any(map(grader, [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names])):
                found.append(f"{node.lineno}: {node.module}")
        elif isinstance(node, ast.Call):
            func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            found += [f"{node.lineno}: {a.value} (by name)" for a in node.args[:1]
                      if func in DYNAMIC_IMPORTS and isinstance(a, ast.Constant) and isinstance(a.value, str)
                      and grader(a.value)]
    return sorted(found, key=lambda line: int(line.split(":")[0]))


def test_nothing_in_kernels_imports_the_grader():
    """kernels/ sits below grader/ (the grader launches the kernels, the kernels never call the
    grader): no module of kernels/, cases and runtime included, imports any of it, lazily or not."""
    if not (REPO / "kernels" / "runtime").is_dir():
        pytest.skip("kernels/ is not split by job in this tree yet (issue 48 item 1)")
    kernels = _modules("kernels")
    assert len(kernels) > 60
    climbs = {name: found for name, path in kernels.items() if (found := _grader_imports(path))}
    assert not climbs, climbs


def test_the_kernels_check_sees_every_kind_of_import(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        "import numpy\n"
        "from backprop_traps.kernels.runtime import device\n"
        "def late():\n"
        "    from backprop_traps.grader.loading.reference import load_solution\n"
        "    import backprop_traps.grader.engine\n"
        "    from backprop_traps.grader import loading\n"
        "    importlib.import_module('backprop_traps.grader.checks')\n"
        "    __import__('grader.cli')\n"
        "if __name__ == '__main__':\n"
        "    from backprop_traps import grader\n", encoding="utf-8")
    assert [line.split(":")[0] for line in _grader_imports(planted)] == ["4", "5", "6", "7", "8", "10"]


ABOVE_THE_SANDBOX = ("grader.engine", "grader.checks", "grader.batch", "grader.commands", "grader.learner",
                     "grader.authoring", "grader.cli", "grader.notebook_grade", "grader.nbgrader_bridge")


def test_the_sandbox_builds_on_nothing_above_it():
    """grader/sandbox/ is the trust boundary, the floor the engine stands on: it imports none of
    the rooms that grade, teach or author (the profile's stamps live beside them all, in
    grader/timeline.py), so what the boundary does can be read without them."""
    up = [f"{a} -> {b} (line {line})" for a, arrows in GRAPH.items() if a.startswith("grader.sandbox")
          for b, line in arrows.items() if b.startswith(ABOVE_THE_SANDBOX)]
    assert not up, up


def test_the_engine_finds_a_questions_checks_without_reaching_into_them():
    """The checks stand on the engine (each builds a ``Question``); the engine finds them by id
    through grader/loading/hidden_checks.py and imports no module of grader/checks/ itself."""
    up = [f"{a} -> {b} (line {line})" for a, arrows in GRAPH.items() if a.startswith("grader.engine")
          for b, line in arrows.items() if b.startswith("grader.checks")]
    assert not up, up
