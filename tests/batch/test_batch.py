"""`grade batch` end to end: a small class in every layout, graded through the command;
resuming after the batch is killed; the same gradebook from a Dask cluster."""
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from conftest import ANSWERS, REPO, solution_source
from backprop_traps.grader.batch.layouts import find_jobs
from backprop_traps.grader.batch.plan import Batch
from backprop_traps.grader.batch.store import ResultStore
from backprop_traps.grader.batch.variants import student_seed
from backprop_traps.grader.commands.batch import batch
from backprop_traps.grader.engine.run import grade_path
from backprop_traps.grader.loading.questions import solution_notebooks
from backprop_traps.grader.sandbox.limits import Limits

SECRET = "course-secret-for-tests"
LIMIT_ARGS = ["--call-timeout", "5", "--total-timeout", "20"]
LIMITS = Limits(call_seconds=5, total_seconds=20)


def build_class(root):
    """Eight submissions: student folders, a flat file, a stub notebook, a broken one."""
    def answer(rel, question, snippet=None):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        extra = (ANSWERS / question / f"{snippet}.py").read_text() if snippet else ""
        path.write_text(f"# question: {question}\n" + solution_source(question) + "\n" + extra)
    answer("alice/routing_trap.py", "routing_trap")
    answer("alice/softmax_ce.py", "softmax_ce", "overflow")
    answer("bob smith/01_routing_trap.py", "routing_trap", "lost_overlap")
    answer("zoë/answer.py", "routing_trap", "tie_order")
    answer("carol_routing_trap.py", "routing_trap", "avg_routing")
    answer("dave_softmax_ce.py", "softmax_ce")
    (root / "erin").mkdir()
    shutil.copy(REPO / "exercises" / "01_routing_trap.ipynb", root / "erin" / "01_routing_trap.ipynb")
    (root / "frank").mkdir()
    (root / "frank" / "broken.ipynb").write_text("{")
    return root


def run_cli(*args, **kw):
    return CliRunner().invoke(batch, [str(a) for a in args], catch_exceptions=False, **kw)


def gradebook(out):
    with open(out / "gradebook.csv", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def results_by_file(out):
    """{result file name: its JSON}, sidecars left out."""
    return {p.name: json.loads(p.read_text()) for p in (out / "results").glob("*.json")
            if not p.name.endswith(".run.json")}


def grades_by_file(out):
    """What two course runs of the same files agree on: each result's grades, check by check.
    Each run draws its own value at grading time (issue 35), so the inputs, and the numbers a
    failing check quotes from them, differ from run to run; `--draw` replays one exactly."""
    return {name: {**{k: v for k, v in doc.items() if k not in ("draw", "tests")},
                   "tests": [{k: t.get(k) for k in ("name", "points", "max_points", "passed", "trap", "grader_error")}
                             for t in doc["tests"]]}
            for name, doc in results_by_file(out).items()}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The class, graded once with a course secret in a file: (class folder, output, secret file)."""
    tmp = tmp_path_factory.mktemp("batch")
    source = build_class(tmp / "class")
    secret_file = tmp / "secret.txt"
    secret_file.write_text(SECRET + "\n")
    out = tmp / "out"
    result = run_cli(source, "-o", out, "-j", 2, "--secret-file", secret_file, *LIMIT_ARGS)
    assert result.exit_code == 0, result.output
    return source, out, secret_file


def test_every_submission_has_one_result_and_a_gradebook_row(graded):
    source, out, _ = graded
    assert len(results_by_file(out)) == 8
    rows = {r["student"]: r for r in gradebook(out)}
    assert list(rows) == ["alice", "bob smith", "carol", "dave", "erin", "frank", "zoë"]
    assert list(rows["alice"]) == ["student", "routing_trap", "softmax_ce", "total", "could_not_grade"]
    assert rows["alice"]["routing_trap"] == "12" and float(rows["alice"]["softmax_ce"]) < 11
    assert rows["dave"]["softmax_ce"] == "11" and rows["dave"]["routing_trap"] == ""
    assert float(rows["bob smith"]["routing_trap"]) < 12 and float(rows["carol"]["routing_trap"]) < 12
    assert rows["frank"] == {"student": "frank", "routing_trap": "", "softmax_ce": "", "total": "0",
                             "could_not_grade": "1"}
    summary = (out / "summary.txt").read_text(encoding="utf-8")
    for words in ("routing_trap (out of 12)", "lost-overlap", "avg-routing", "tie-order", "overflow",
                  "Needs a look (1:", "frank  frank/broken.ipynb: could not be graded: ",
                  "per student, from the course secret"):
        assert words in summary
    assert (out / "summary.png").stat().st_size > 1000


def test_results_follow_the_contract_and_replay_exactly(graded):
    """A sidecar's seed is HMAC(secret, student, assignment, question), its draw was made at
    grading time, and its `grade --draw D --seed N` replays the run."""
    source, out, _ = graded
    store = ResultStore(out)
    jobs = {j.rel: j for j in find_jobs(source, list(solution_notebooks()))}
    result, meta = store.load(jobs["zoë/answer.py"])
    assert set(result) == {"submission", "question", "score", "max_score", "error", "tests", "seed",
                           "isolation", "draw"}  # the sandbox layers that ran (README), the grading's draw
    assert result["seed"] == meta["seed"] and result["draw"] == meta["draw"]
    assert meta["seed"] == student_seed(SECRET, "zoë", 1234, assignment="", question=result["question"]) != 1234
    assert meta["replay"].endswith(f"--seed {meta['seed']} --replay --call-timeout 5 --total-timeout 20 --code-timeout 5")
    assert f"--draw {meta['draw']}" in meta["replay"]
    assert any(t["trap"] == "tie-order" for t in result["tests"])
    replayed = grade_path(jobs["zoë/answer.py"].path, seed=meta["seed"], limits=LIMITS, draw=meta["draw"]).to_json()
    assert replayed == result
    assert store.load(jobs["alice/routing_trap.py"])[1]["seed"] != meta["seed"]


def test_a_second_run_skips_what_is_graded_and_regrades_a_changed_file(graded, tmp_path):
    source, out, secret_file = graded
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    before = {p.name: p.stat().st_mtime_ns for p in (copy / "results").iterdir()}
    again = run_cli(source, "-o", copy, "--secret-file", secret_file, *LIMIT_ARGS)
    assert again.exit_code == 0 and "0 to grade, 8 already graded" in again.output
    assert {p.name: p.stat().st_mtime_ns for p in (copy / "results").iterdir()} == before
    changed = tmp_path / "class"
    shutil.copytree(source, changed)
    (changed / "frank" / "broken.ipynb").write_text("{ still broken")
    third = run_cli(changed, "-o", copy, "--secret-file", secret_file, *LIMIT_ARGS)
    assert "1 to grade, 7 already graded" in third.output
    jobs = find_jobs(changed, list(solution_notebooks()))
    assert Batch(jobs, ResultStore(copy), LIMITS, secret=SECRET).pending() == []
    assert len(Batch(jobs, ResultStore(copy), LIMITS, secret="another").pending()) == 8  # other seeds


def test_usage_errors_and_the_seed_of_a_student(tmp_path, graded):
    _, _, secret_file = graded
    assert run_cli().exit_code == 2
    (tmp_path / "empty").mkdir()
    empty = run_cli(tmp_path / "empty", "-o", tmp_path / "out")
    assert empty.exit_code == 2 and "found no submissions" in empty.output
    assert run_cli(tmp_path / "missing", "-o", tmp_path / "out").exit_code == 2
    seed = run_cli("--seed-of", "zoë/routing_trap", "--secret-file", secret_file)
    assert seed.exit_code == 0 and seed.stdout.strip() == str(
        student_seed(SECRET, "zoë", 1234, assignment="", question="routing_trap"))
    assert run_cli("--seed-of", "zoë/ps1/routing_trap", "--secret-file", secret_file).stdout.strip() == str(
        student_seed(SECRET, "zoë", 1234, assignment="ps1", question="routing_trap")) != seed.stdout.strip()
    assert run_cli("--seed-of", "zoë/routing_trap").stdout.strip() == "1234"  # no secret: the default seed
    assert run_cli("--seed-of", "zoë", "--secret-file", secret_file).exit_code == 2  # seeds are per question


def test_grade_batch_is_a_subcommand_of_grade():
    from backprop_traps.grader.cli import main
    out = CliRunner().invoke(main, ["batch", "--help"])
    assert out.exit_code == 0 and "--scheduler" in out.output


def test_a_killed_batch_resumes_and_matches_a_clean_run(graded, tmp_path):
    """SIGKILL the batch once some results exist; the rerun grades only the rest, touches
    nothing already written, and every submission ends with exactly one result."""
    source, clean, secret_file = graded
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "backprop_traps.grader.batch", str(source), "-o", str(out), "-j", "2",
           "--secret-file", str(secret_file), *LIMIT_ARGS]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while len(results_by_file(out) if (out / "results").is_dir() else {}) < 2:
        assert proc.poll() is None and time.monotonic() < deadline, "the batch ended before it could be killed"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    survivors = results_by_file(out)
    assert 2 <= len(survivors) < 8, "killed too late to test resuming"
    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{8 - len(survivors)} to grade, {len(survivors)} already graded" in rerun.stderr
    final = results_by_file(out)
    assert len(final) == 8 and all(final[name] == doc for name, doc in survivors.items())
    assert grades_by_file(out) == grades_by_file(clean)
    assert gradebook(out) == gradebook(clean)
    assert not [p for p in (out / "results").iterdir() if p.name.endswith(".tmp")]


def test_dask_cluster_gives_the_same_gradebook(graded, tmp_path):
    distributed = pytest.importorskip("distributed")
    source, clean, secret_file = graded
    out = tmp_path / "out"
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        result = run_cli(source, "-o", out, "--secret-file", secret_file, *LIMIT_ARGS,
                         "--scheduler", cluster.scheduler_address)
    assert result.exit_code == 0, result.output
    assert grades_by_file(out) == grades_by_file(clean)
    assert gradebook(out) == gradebook(clean)
