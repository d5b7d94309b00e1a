"""Issue 35, class 5: a seed never reaches a student, and knowing one is worth nothing.

- A file that builds vram_trap's measured call's inputs at load time from a seed it knows,
  and keeps only the answer, does not beat a classmate handing in the same file: in a course
  every grading draws a value at grading time, so the inputs are unknowable beforehand
  (`grade batch` with a course secret, in the default mode and without bubblewrap). The
  practice path, which stays reproducible with `--seed`, shows the attack is real.
- A replay token gives nothing for another student, question or assignment, opens only with
  the course secret, and never holds the seed; seeds differ between questions and
  assignments. The feedback page nbgrader gives the student is tested in
  tests/batch/test_nbgrader_course.py::test_the_feedback_page_shows_a_token_and_no_seed.
"""
import base64
import json

import pytest
from click.testing import CliRunner

from backprop_traps.grader.batch import replay_token
from backprop_traps.grader.batch.variants import student_seed
from backprop_traps.grader.cli import main
from backprop_traps.grader.engine.draws import checks_seed, new_draw
from backprop_traps.grader.engine.run import grade_path
from redteam_kit import build, mode  # noqa: F401 (mode: a fixture)

SECRET = "redteam-seed-secret"
ATTACKER, CLASSMATE = "ada", "bea"
LIMITS = ["--call-timeout", "10", "--total-timeout", "40"]


def memory_points(result: dict) -> float:
    return next(t["points"] for t in result["tests"] if t["name"].startswith("peak memory"))


@pytest.mark.parametrize("sandbox", ["default", "no_bwrap"])
def test_a_precomputing_submission_does_not_beat_its_classmate(tmp_path, mode, sandbox):
    mode(sandbox)
    known = student_seed(SECRET, ATTACKER, 1234, assignment="", question="vram_trap")  # she knows hers
    practice = grade_path(build("seed_precompute_measured_inputs", tmp_path, seed=known), seed=known)
    if practice.tests[-1].feedback.startswith("Peak memory cannot be measured") or not any(
            "memory" in t.name and t.passed for t in practice.tests):
        pytest.skip("no memory meter here: the memory check gives nobody its points")
    assert practice.score == practice.max_score  # the attack is real where inputs are predictable
    source = tmp_path / "class"
    for student in (ATTACKER, CLASSMATE):
        (source / student).mkdir(parents=True)
        build("seed_precompute_measured_inputs", source / student, filename="vram_trap.py", seed=known)
    (tmp_path / "secret").write_text(SECRET)
    out = tmp_path / "out"
    run = CliRunner().invoke(main, ["batch", str(source), "-o", str(out), "-j", "1", "--secret-file",
                                    str(tmp_path / "secret"), *LIMITS])
    assert run.exit_code == 0, run.output
    results = {json.loads(p.read_text())["submission"].split("/")[-2]: json.loads(p.read_text())
               for p in (out / "results").glob("*.json") if not p.name.endswith(".run.json")}
    mine, theirs = results[ATTACKER], results[CLASSMATE]
    assert mine["seed"] == known and mine["draw"] and mine["draw"] != theirs["draw"]
    assert mine["score"] == theirs["score"] < mine["max_score"], (mine["score"], theirs["score"])
    assert memory_points(mine) == memory_points(theirs) == 0


def test_seeds_differ_by_student_assignment_and_question():
    seeds = {(s, a, q): student_seed(SECRET, s, 1234, assignment=a, question=q)
             for s in ("ada", "bea") for a in ("", "ps1", "ps2") for q in ("routing_trap", "vram_trap")}
    assert len(set(seeds.values())) == len(seeds)
    assert student_seed(SECRET, "ada", 1234, assignment="ps1", question="vram_trap") == seeds["ada", "ps1", "vram_trap"]
    assert student_seed(None, "ada", 1234, assignment="ps1", question="vram_trap") == 1234  # no secret
    draw = new_draw()
    assert checks_seed(1234, None) == 1234 and checks_seed(1234, draw) != checks_seed(1234, new_draw())


def test_a_token_gives_nothing_for_another_student_question_or_assignment(tmp_path):
    draw = new_draw()
    run = replay_token.Replay("ada", "ps1", "vram_trap", draw)
    token = replay_token.make(SECRET, run)
    assert replay_token.read(SECRET, token) == run
    seed = student_seed(SECRET, "ada", 1234, assignment="ps1", question="vram_trap")
    raw = base64.urlsafe_b64decode(token[5:] + "=" * (-len(token[5:]) % 4))
    for shown in (str(seed), hex(seed)[2:], draw, "vram_trap", "ps1"):  # sealed: nothing readable
        assert shown not in token and shown.encode() not in raw
    with pytest.raises(replay_token.BadToken):
        replay_token.read("another course", token)
    with pytest.raises(replay_token.BadToken):
        replay_token.read(None, token)
    for other in (replay_token.Replay("bea", "ps1", "vram_trap", draw), replay_token.Replay("ada", "ps2", "vram_trap", draw),
                  replay_token.Replay("ada", "ps1", "routing_trap", draw)):
        forged = replay_token.make(SECRET, other)
        assert forged != token and replay_token.read(SECRET, forged) == other  # only the secret makes one
    flipped = token[:-3] + ("A" if token[-3] != "A" else "B") + token[-2:]
    with pytest.raises(replay_token.BadToken):  # an altered token is refused, not read as another run
        replay_token.read(SECRET, flipped)


def test_grade_replay_refuses_a_token_without_its_secret(tmp_path):
    answer = build("honest", tmp_path, filename="answer.py")
    token = replay_token.make(SECRET, replay_token.Replay("ada", "", "forward_vs_reverse", new_draw()))
    (tmp_path / "secret").write_text(SECRET)
    refused = CliRunner().invoke(main, ["replay", token, str(answer)])
    assert refused.exit_code == 2 and "not made with this course secret" in refused.output
    done = CliRunner().invoke(main, ["replay", token, str(answer), "--secret-file", str(tmp_path / "secret"), "--json"])
    assert done.exit_code == 0, done.output
    doc = json.loads(done.output)
    assert doc["seed"] == student_seed(SECRET, "ada", 1234, assignment="", question="forward_vs_reverse")
    assert doc["score"] == doc["max_score"] and doc["draw"] == replay_token.read(SECRET, token).draw


def test_practice_stays_reproducible_with_its_seed(tmp_path):
    answer = build("honest", tmp_path, filename="answer.py")
    first, again = (CliRunner().invoke(main, [str(answer), "--seed", "7", "--json"]) for _ in range(2))
    one, two = json.loads(first.output), json.loads(again.output)
    assert one == two and one["seed"] == 7 and "draw" not in one and "token" not in one
