"""Issue 38, item 9: a benchmark cannot silently shrink. The batch benchmark found questions
by `grader/checks/<id>.py` and dropped the 14 whose checks became packages, reporting 14.1
submissions/s over the six cheapest."""
import importlib.util
import sys
from pathlib import Path

import pytest

from backprop_traps.grader.loading.questions import solution_notebooks

REPO = Path(__file__).resolve().parents[2]


def _bench(name):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_batch_benchmark_covers_every_question(tmp_path):
    bench = _bench("batch_throughput")
    every = list(solution_notebooks(REPO))
    assert bench.questions_with_checks() == every
    count = 2 * len(every)
    bench.make_class(tmp_path / "class", count)
    handed_in = set()
    for folder in (tmp_path / "class").iterdir():
        for f in folder.iterdir():
            text = f.read_text() if f.suffix == ".py" else ""
            handed_in |= {q for q in every if f"# question: {q}\n" in text or f.name.endswith(f"{q}.ipynb")}
    assert handed_in == set(every)


def test_a_question_without_checks_stops_the_benchmark_instead_of_vanishing(monkeypatch):
    bench = _bench("batch_throughput")
    import backprop_traps.grader.checks as checks
    real = checks.checks_source
    monkeypatch.setattr(checks, "checks_source", lambda q, root=None: None if q == "bptt" else real(q, root))
    with pytest.raises(SystemExit, match="bptt"):
        bench.questions_with_checks()
    monkeypatch.undo()
    with pytest.raises(SystemExit, match="unknown question ids: nope"):
        bench.chosen_questions(["routing_trap", "nope"])
