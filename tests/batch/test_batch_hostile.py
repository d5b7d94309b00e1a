"""The hostile suite: adversarial submissions, each with its expected outcome, graded singly
and through `grade batch`. The grader stays up, scores honestly, loses no row, and leaves
no process or file behind.

Cases: tests/answers/hostile_suite/*.py (their header says what each does and what to
expect) plus tests/answers/hostile/*.py (expectations in test_hostile.CASES, which also
grades those singly). Short limits keep the suite fast: 1 s per call, 3 s in all.
"""
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest

from conftest import ANSWERS, REPO, solution_source
from backprop_traps.grader.engine.run import grade_path
from backprop_traps.grader.sandbox import landlock
from backprop_traps.grader.sandbox.limits import Limits
from test_hostile import CASES as OLD_CASES

SUITE = ANSWERS / "hostile_suite"
LIMITS = Limits(call_seconds=1.0, total_seconds=3.0, memory_mb=1024)
LIMIT_ARGS = ["--call-timeout", "1", "--total-timeout", "3", "--memory-mb", "1024"]
SECRET = "course-secret-for-the-hostile-suite"
PWNED = ["/tmp/backprop-traps-pwned", "/tmp/backprop-traps-pwned-write", "/tmp/backprop-traps-pwned-disk",
         "/dev/shm/backprop-traps-pwned", "/tmp/backprop-traps-pwned-home"]
# A few students with names that must not trip the batch (spaces, unicode, dots, quotes).
ODD_NAMES = {"fork_storm": "fork storm (50 children)", "writes_outside": "..writes_outside",
             "steal_secret": "zoë 'steal' secret", "reads_neighbours": "$(reads) neighbours;"}


@dataclass
class Case:
    name: str
    body: str
    most: float | None
    """The most it may score; None: it must score full marks (the attack failed)."""
    says: str | None
    needs: str | None = None


def _header(text: str, key: str) -> str | None:
    found = re.search(rf"^# {key}: (.+)$", text, re.MULTILINE)
    return found.group(1).strip() if found else None


def new_cases() -> list[Case]:
    cases = []
    for path in sorted(SUITE.glob("*.py")):
        text = path.read_text()
        base = solution_source("routing_trap") + "\n" if _header(text, "base") == "solution" else ""
        expect = _header(text, "expect")
        most = None if expect == "full" else float(expect.split()[-1])
        cases.append(Case(path.stem, "# question: routing_trap\n" + base + text, most,
                          _header(text, "says"), _header(text, "needs")))
    return cases


def old_cases() -> list[Case]:
    cases = []
    for name, (on_solution, says, most) in OLD_CASES.items():
        body = (ANSWERS / "hostile" / f"{name}.py").read_text()
        if on_solution:
            body = solution_source("routing_trap") + "\n" + body
        cases.append(Case(name, "# question: routing_trap\n" + body, most, says))
    return cases


def unmet(need: str | None) -> str | None:
    """Why a case cannot be expected to hold here, or None."""
    if need == "landlock-signals" and landlock.abi_version() < 6:
        return "no Landlock signal scoping (ABI 6, Linux 6.12): a submission could signal the grader"
    if need == "no-cap-sys-resource" and can_raise_hard_limits():
        return "the grader runs with CAP_SYS_RESOURCE: run it as an unprivileged user (README, security)"
    return None


def can_raise_hard_limits() -> bool:
    probe = ("import resource\nsoft, hard = resource.getrlimit(resource.RLIMIT_CORE)\n"
             "resource.setrlimit(resource.RLIMIT_CORE, (0, 0))\n"
             "try:\n    resource.setrlimit(resource.RLIMIT_CORE, (0, 1))\nexcept ValueError:\n    raise SystemExit(1)\n")
    return subprocess.run([sys.executable, "-c", probe]).returncode == 0


def check_outcome(case: Case, result: dict) -> None:
    feedback = [t["feedback"] for t in result["tests"]]
    assert result["error"] is None, (case.name, result["error"])
    assert result["tests"], case.name
    if case.most is None:
        assert result["score"] == result["max_score"], (case.name, feedback)
    else:
        assert result["score"] <= case.most, (case.name, feedback)
    if case.says:
        assert any(case.says in f for f in feedback), (case.name, feedback)
    assert not any("Traceback" in f for f in feedback), case.name


def hostile_leftovers(wait: float = 10.0) -> list[int]:
    """Live processes the suite's submissions named ``bpt-hostile`` (zombies excepted),
    after giving the kills ``wait`` seconds to land."""
    deadline = time.monotonic() + wait
    while True:
        alive = []
        for entry in os.listdir("/proc"):
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            if b"(bpt-hostile)" in stat and stat.rsplit(b")", 1)[1].split()[0] != b"Z":
                alive.append(int(entry))
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


def assert_nothing_escaped() -> None:
    assert hostile_leftovers() == []
    assert [p for p in PWNED if os.path.exists(p)] == []


@pytest.mark.parametrize("case", new_cases(), ids=lambda c: c.name)
def test_hostile_case_singly(tmp_path, case):
    if unmet(case.needs):
        pytest.skip(unmet(case.needs))
    path = tmp_path / f"{case.name}.py"
    path.write_text(case.body)
    check_outcome(case, grade_path(path, limits=LIMITS).to_json())
    assert_nothing_escaped()


def test_hostile_suite_through_grade_batch(tmp_path):
    """Every case as one student of a class, graded by `grade batch -j 2` in its own process
    (with the course secret in its environment): each outcome as expected, a result and a
    gradebook row for everyone, and the output folder holds only what the batch wrote."""
    cases = [c for c in new_cases() + old_cases() if not unmet(c.needs)]
    assert len(cases) >= 25
    source, out = tmp_path / "class", tmp_path / "out"
    for case in cases:
        folder = source / ODD_NAMES.get(case.name, case.name)
        folder.mkdir(parents=True)
        (folder / "answer.py").write_text(case.body)
    env = {**os.environ, "BACKPROP_TRAPS_SECRET": SECRET, "PYTHONPATH": str(REPO)}
    run = subprocess.run([sys.executable, "-m", "backprop_traps.grader.batch", str(source), "-o", str(out), "-j", "2",
                          *LIMIT_ARGS], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]

    results = {}
    for sidecar in (out / "results").glob("*.run.json"):
        meta = json.loads(sidecar.read_text())
        results[meta["student"]] = json.loads(sidecar.with_name(sidecar.name[:-len(".run.json")] + ".json").read_text())
        assert meta["seeded_by"] == "course secret" and f"--seed {meta['seed']}" in meta["replay"]
    assert len(results) == len(cases)
    for case in cases:
        check_outcome(case, results[ODD_NAMES.get(case.name, case.name)])

    rows = (out / "gradebook.csv").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 1 + len(cases)
    assert {p.name for p in out.iterdir()} - {"grading-processes.log"} == {"gradebook.csv", "results", "summary.png", "summary.txt"}
    assert all(p.name.endswith(".json") for p in (out / "results").iterdir())
    assert_nothing_escaped()
