"""Issue 43, class 1, in a batch's output folder: stored results and their sidecars are data
anyone with the folder could have edited. `grade show` and `grade export` computed with them
as written (`float("twelve")`, an infinite score in a percentage). Now they pass the same
schema as the history (grader/loading/persisted.py): one that fails is left out with one
sentence (and graded again by the next run), never computed with."""
import json
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from backprop_traps.grader.batch import store as batch_store
from backprop_traps.grader.batch.layouts import Job
from backprop_traps.grader.batch.store import ResultStore
from backprop_traps.grader.cli import main
from backprop_traps.grader.loading import persisted
from persisted_strategies import json_values, numbers, texts

GOOD_RESULT = {"submission": "amy/a.py", "question": "routing_trap", "score": 6.0, "max_score": 12.0, "error": None,
               "tests": [{"name": "overlaps accumulate", "points": 0.0, "max_points": 6.0, "passed": False,
                          "trap": "lost-overlap", "feedback": "Add, do not overwrite."}], "seed": 7}
GOOD_SIDECAR = {"student": "amy", "file": "amy/a.py", "question_from_layout": None, "seed": 7,
                "seeded_by": "default seed", "draw": None, "token": None, "replay": "grade amy/a.py --seed 7",
                "replay_by_token": None, "sha256": "ab" * 32, "submitted_at": "2026-11-20T10:00:00+00:00",
                "status": "graded", "isolation": "bubblewrap", "seconds": 1.5, "untouched_stub": False}
results = st.fixed_dictionaries({}, optional={
    "question": st.sampled_from(["routing_trap"]) | texts, "score": numbers, "max_score": numbers,
    "error": texts | st.none(), "warnings": st.lists(texts, max_size=2) | json_values, "seed": numbers,
    "tests": st.lists(st.fixed_dictionaries({}, optional={
        "name": texts, "points": numbers, "max_points": numbers, "passed": json_values, "trap": texts,
        "feedback": texts}), max_size=3) | json_values})
sidecars = st.fixed_dictionaries({"student": st.just("bob") | texts}, optional={
    "file": texts, "status": st.sampled_from(["graded", "worker-failed", "gone", None, 1]), "seed": numbers,
    "seconds": numbers, "untouched_stub": json_values, "submitted_at": texts, "token": texts, "replay": texts})


def _folder(tmp_path: Path, result, sidecar) -> Path:
    """An output folder with Amy's honest result and Bob's as generated."""
    out = tmp_path / "out"
    store = ResultStore(out)
    store.write(Job("amy", Path("amy/a.py"), "amy/a.py"), GOOD_RESULT, GOOD_SIDECAR)
    bob = Job("bob", Path("bob/a.py"), "bob/a.py")
    result_path, sidecar_path = store._paths(bob)
    sidecar_path.write_text(json.dumps(sidecar), encoding="utf-8")
    result_path.write_text(json.dumps(result), encoding="utf-8")
    return out


def _run(args):
    out = CliRunner().invoke(main, args)
    assert out.exception is None or isinstance(out.exception, SystemExit), out.exc_info
    assert out.exit_code in (0, 2) and "Traceback" not in out.output
    return out


@given(result=results, sidecar=sidecars)
@settings(max_examples=10, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@example(result={**GOOD_RESULT, "score": "twelve"}, sidecar={**GOOD_SIDECAR, "student": "bob"})
@example(result={**GOOD_RESULT, "score": float("inf")}, sidecar={**GOOD_SIDECAR, "student": "bob"})
@example(result={**GOOD_RESULT, "tests": "all of them"}, sidecar={**GOOD_SIDECAR, "student": "bob", "seed": -1})
def test_show_and_export_never_compute_with_a_record_the_batch_never_wrote(tmp_path_factory, result, sidecar):
    out = _folder(tmp_path_factory.mktemp("batch"), result, sidecar)
    shown = _run(["show", str(out), "amy"])
    assert shown.exit_code == 0 and "6 / 12" in shown.output.replace("6/12", "6 / 12")
    _run(["show", str(out), "bob"])
    exported = _run(["export", str(out), "-o", str(out / "grades.csv")])
    assert exported.exit_code == 0 and "amy" in (out / "grades.csv").read_text()


def test_the_issues_kind_of_record_is_left_out_with_one_sentence(tmp_path, capsys):
    out = _folder(tmp_path, {**GOOD_RESULT, "score": "twelve"}, {**GOOD_SIDECAR, "student": "bob"})
    batch_store._TOLD.clear()  # said once a process: the fuzz may have said it already
    found = ResultStore.existing(out).everything()
    assert [job.student for job, _, _ in found] == ["amy"]
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and "left out" in said and "score is not a number" in said


def test_what_the_batch_writes_passes_the_schema():
    assert {batch_store.GRADED, batch_store.BROKE_WORKER, batch_store.GRADER_ERROR} <= set(persisted.BATCH_STATUSES)
    assert persisted.batch_result(GOOD_RESULT) == GOOD_RESULT
    assert persisted.batch_sidecar(GOOD_SIDECAR) == GOOD_SIDECAR
