"""Key points: the grammar, the matcher, and what every question's points recognise (its own
hired answer, correct answers in other words, not the usual wrong answer); validate's proofs."""
import pytest

from interview_paraphrases import PARAPHRASES, WRONG
import interview_paraphrases_15_20
import interview_paraphrases_21_22
from backprop_traps.grader.authoring import interview, keypoint_proofs
from backprop_traps.grader.authoring.findings import QuestionReport
from backprop_traps.grader.learner import keypoints
from backprop_traps.grader.loading.questions import solution_notebooks

PARAPHRASES = {**PARAPHRASES, **interview_paraphrases_15_20.PARAPHRASES,
               **interview_paraphrases_21_22.PARAPHRASES}
WRONG = {**WRONG, **interview_paraphrases_15_20.WRONG, **interview_paraphrases_21_22.WRONG}
QUESTIONS = solution_notebooks()


def parsed(question):
    return interview.parse(interview.read_notebook(QUESTIONS[question])[0])


@pytest.mark.parametrize("typed, said", [
    ("Each row of dx SUMS to zero!", "each row of dx sums to zero"),
    ("zero-sum, log-sum-exp, x-hat, 1-bit", "zero sum log sum exp x hat 1 bit"),
    ("p-y and p - y", "p - y and p - y"),
    ("1/√d", "1 / sqrt d"),
    ("W2ᵀ, W.T and W^T", "w2 transpose w transpose and w transpose"),
    ("σ(z)(1 − σ(z)) ≤ 0.25", "sigma z 1 - sigma z <= 0.25"),
    ("x̂ · ε, 10,000 and 1e-4", "x hat * eps 10000 and 1e-4"),
])
def test_normalise_spells_symbols_and_drops_punctuation(typed, said):
    assert keypoints.normalise(typed) == said


POINTS = """
- each row of dx sums to zero: sum + zero; sum to 0; zero-sum; sum(dx) = 0
- the mean and variance depend on x: mean + depend on x; statistics + not constant
- scale by root d: 1/sqrt(d); divide + sqrt(d); / √d
- the loss is a mean: L/s+s; mean loss
"""


def test_an_alternative_needs_every_part_at_a_word_start():
    points, problems = keypoints.parse(POINTS)
    assert problems == [] and [p.point for p in points][:2] == [
        "each row of dx sums to zero", "the mean and variance depend on x"]
    rows, stats, root, plus = points
    assert rows.matches("the rows of dx all sum to 0") and rows.matches("dx is zero-sum per row")
    assert rows.matches("Summing a row gives zero") and not rows.matches("assume it is zero")
    assert stats.matches("the Mean depends on x as well") and stats.matches("statistics are not constants")
    assert not stats.matches("the mean is constant")
    assert root.matches("divide the scores by √d") and root.matches("multiply by 1 / sqrt(d)")
    assert not root.matches("divide by d")
    assert plus.matches("about L / s + s activations") and not plus.matches("L / s and s")


def test_a_negated_claim_does_not_count_but_a_condition_does():
    points, _ = keypoints.parse(POINTS)
    rows, stats, _, _ = points
    assert not stats.matches("the mean does not depend on x") and not stats.matches("the mean doesn't depend on x")
    assert not rows.matches("each row does not sum to zero") and not rows.matches("rows never sum to zero")
    assert stats.matches("the mean is not free: it depends on x")  # the negation is not before the part
    assert rows.matches("if dx did not sum to zero, the shift would leak")  # a condition, not a claim
    assert rows.matches("it is not the loss: each row sums to zero")
    assert stats.matches("the statistics are not constant")  # a part that says "not" itself


def test_hits_and_the_phrase_itself_counts():
    points, _ = keypoints.parse(POINTS)
    assert keypoints.hits(points, "Each row of dx sums to zero.") == [True, False, False, False]
    assert keypoints.hits(points, "") == [False] * 4


@pytest.mark.parametrize("section, problem", [
    ("- one: a\n- two: b\n- three: c", "3 key points; write 4 to 7"),
    ("\n".join(f"- p{i}: w{i}" for i in range(8)), "8 key points"),
    ("- no colon here\n- two: b\n- three: c\n- four: d", "is not '- phrase: a way of saying it"),
    ("- one: ,,;a\n- two: b\n- three: c\n- four: d", "has no word or symbol to look for"),
])
def test_parse_names_a_malformed_section(section, problem):
    assert any(problem in p for p in keypoints.parse(section)[1])


@pytest.mark.parametrize("question", list(QUESTIONS))
def test_every_question_has_sound_key_points(question):
    it = parsed(question)
    low, high = keypoints.POINTS
    assert low <= len(it.key_points) <= high and not it.problems
    assert all(keypoints.hits(it.key_points, it.hired)), "the hired answer hits every point"
    assert 2 * sum(keypoints.hits(it.key_points, it.wrong_quote)) < len(it.key_points)
    assert 2 * sum(keypoints.hits(it.key_points, it.question)) < len(it.key_points), \
        "repeating the question back is not an answer"
    assert not any(keypoints.hits(it.key_points, ""))


@pytest.mark.parametrize("question", [q for q in QUESTIONS if q in PARAPHRASES])
def test_correct_answers_in_other_words_hit_most_points(question):
    it = parsed(question)
    for answer in PARAPHRASES[question]:
        found = keypoints.hits(it.key_points, answer)
        missed = [p.point for p, hit in zip(it.key_points, found) if not hit]
        assert 2 * sum(found) > len(found), f"{question}: {answer[:60]!r} misses {missed}"
    mean = sum(sum(keypoints.hits(it.key_points, a)) for a in PARAPHRASES[question]) / len(PARAPHRASES[question])
    assert mean >= 0.66 * len(it.key_points), f"{question}: on average {mean:.1f} of {len(it.key_points)}"


@pytest.mark.parametrize("question", [q for q in QUESTIONS if q in WRONG])
def test_wrong_answers_in_other_words_hit_fewer_than_half(question):
    it = parsed(question)
    for answer in WRONG[question]:
        assert 2 * sum(keypoints.hits(it.key_points, answer)) < len(it.key_points), answer


def _proved(it):
    report = QuestionReport("q")
    keypoint_proofs.prove(report, it)
    return report


def test_validate_proves_the_shipped_key_points():
    report = _proved(parsed("layernorm_backward"))
    assert report.ok and "the hired answer hits all 6" in report.text()


def test_validate_fails_a_point_the_hired_answer_misses():
    it = parsed("softmax_ce")
    it.key_points.append(keypoints.KeyPoint("a point nobody says", [["quaternion"]]))
    report = _proved(it)
    assert not report.ok and "the hired answer misses 1 of 6" in report.text()
    assert "a point nobody says" in report.text()


def test_validate_fails_points_the_wrong_answer_hits():
    it = parsed("layernorm_backward")
    for point in it.key_points[:3]:
        point.alternatives.append(["dy"])  # the wrong answer says dy
    report = _proved(it)
    assert not report.ok and "the wrong answer hits 3 of 6" in report.text()


def test_validate_fails_a_point_an_empty_answer_hits():
    it = parsed("loss_scaling")
    it.key_points[0].alternatives.append([])
    report = _proved(it)
    assert not report.ok and "an empty answer hits key points" in report.text()


def test_validate_fails_a_question_without_key_points():
    it = parsed("loss_scaling")
    it.key_points = []
    assert "no key points" in _proved(it).text()


def test_grade_new_scaffolds_a_key_points_section_that_parses(tmp_path):
    from click.testing import CliRunner
    from backprop_traps.grader.cli import main
    out = CliRunner().invoke(main, ["new", "toy_layer", "--questions-dir", str(tmp_path)])
    assert out.exit_code == 0, out.output
    (notebook,) = (tmp_path / "solutions").glob("*_toy_layer.ipynb")
    it = interview.parse(interview.read_notebook(notebook)[0])
    assert not it.problems and len(it.key_points) == 4
    assert _proved(it).ok  # the scaffold's own placeholders are consistent; the author replaces them
