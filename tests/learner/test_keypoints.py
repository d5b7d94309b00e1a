"""Key points: the spelling, the clause reader, the matcher (claims only: no lists, no denials,
no questions, formulas as formulas, paraphrase through lemmas and the glossary), every
question's points against its notebook and its adversarial corpus, and validate's proofs."""
import re

import pytest

import interview_paraphrases
import interview_paraphrases_15_20
import interview_paraphrases_21_22
import interview_paraphrases_23_24
import interview_paraphrases_27
from backprop_traps.grader.authoring import interview, keypoint_corpus, keypoint_proofs
from backprop_traps.grader.authoring.findings import QuestionReport
from backprop_traps.grader.learner import clauses, keypoints
from backprop_traps.grader.loading.questions import solution_notebooks
from conftest import REPO

PARAPHRASES = {**interview_paraphrases.PARAPHRASES, **interview_paraphrases_15_20.PARAPHRASES,
               **interview_paraphrases_21_22.PARAPHRASES, **interview_paraphrases_23_24.PARAPHRASES,
               **interview_paraphrases_27.PARAPHRASES}
WRONG = {**interview_paraphrases.WRONG, **interview_paraphrases_15_20.WRONG,
         **interview_paraphrases_21_22.WRONG, **interview_paraphrases_23_24.WRONG,
         **interview_paraphrases_27.WRONG}
QUESTIONS = solution_notebooks()


def parsed(question):
    return interview.parse(interview.read_notebook(QUESTIONS[question])[0])


@pytest.mark.parametrize("typed, said", [
    ("Each row of dx SUMS to zero!", "each row of dx sums to zero"),
    ("zero-sum, log-sum-exp, x-hat, 1-bit", "zero sum log sum exp x_hat 1 bit"),
    ("p-y and p - y", "p - y and p - y"),
    ("1/√d", "1 / sqrt d"),
    ("W2ᵀ, W.T and W^T", "w2 transpose w transpose and w transpose"),
    ("σ(z)(1 − σ(z)) ≤ 0.25", "sigma ( z ) ( 1 - sigma ( z ) ) <= 0.25"),
    ("x̂ · ε, 10,000 and 1e-4", "x_hat * eps 10000 and 1e-4"),
    ("sqrt(v_hat) + eps vs √(v̂ + ε)", "sqrt ( v_hat ) + eps vs sqrt ( v_hat + eps )"),
    ("m̂ = m / (1 - β₁ᵗ), beta1**t", "m_hat = m / ( 1 - beta ^ t ) beta ^ t"),
    ("doesn't, can't, it's", "does not can not it is"),
])
def test_normalise_spells_symbols_and_keeps_brackets_and_operators(typed, said):
    assert keypoints.normalise(typed) == said


def roles(text):
    r = clauses.read(text)
    return {t.text: (r.role[i], r.negated[i]) for i, t in enumerate(r.tokens) if t.kind == "word"}


def test_the_clause_reader_tells_claims_from_lists_questions_and_denials():
    assert roles("Bias correction, 1 - beta. Decoupled. eps outside.")["decoupled"] == (clauses.FRAGMENT, False)
    said = roles("Decay is decoupled: p shrinks directly, not through the gradient.")
    assert said["shrinks"] == (clauses.CLAIM, False) and said["gradient"] == (clauses.CLAIM, True)
    asked = roles("Why is weight decay decoupled, and where does eps go?")
    assert asked["decoupled"][0] == asked["eps"][0] == clauses.ASKED
    contrast = roles("Put eps inside the square root instead of outside it.")
    assert contrast["inside"] == (clauses.CLAIM, False) and contrast["outside"] == (clauses.CLAIM, True)
    listed = roles("You need bias correction, decoupled decay, eps outside, master copies, and sharding.")
    assert listed["decoupled"][0] == clauses.LISTED
    advice = roles("If you don't subtract the max, exp overflows.")  # the negated condition is the advice
    assert advice["subtract"] == (clauses.CONDITION, False) and advice["overflows"][0] == clauses.CLAIM
    but = roles("The gradient is not averaged over positions but summed.")
    assert but["averaged"][1] and not but["summed"][1]


POINTS = """
- each row of dx sums to zero: row + dx + {sum}|sum + zero|0
- the mean and variance depend on x: mean|variance + depend|function of + x
- eps goes outside the square root: {eps} + outside|after + {sqrt}; {sqrt} _+{eps}
- bias correction divides by one minus beta to the t: divide + {bias_correction}; {bias_correction}
"""


def test_a_point_needs_a_claim_not_a_list_of_its_words():
    rows, stats, eps, bias = keypoints.parse(POINTS)[0]
    assert rows.matches("Each row of dx sums to zero.") and rows.matches("the rows of dx all add up to 0")
    assert not rows.matches("Row, dx, sum, zero.") and not rows.matches("Rows of dx. Sum. Zero.")
    assert stats.matches("The mean depends on x as well.") and not stats.matches("the mean is constant")
    assert not stats.matches("Does the mean depend on x?")
    assert not keypoints.parse(POINTS)[0][0].matches("")


def test_negation_and_contrast_are_read_clause_by_clause():
    _, stats, eps, _ = keypoints.parse(POINTS)[0]
    assert not stats.matches("The mean does not depend on x.") and not stats.matches("the mean doesn't depend on x")
    assert stats.matches("The mean is not free: it depends on x.")  # the negation is in another clause
    assert not eps.matches("eps goes inside the square root, not outside")
    assert not eps.matches("Add eps inside the root rather than after it.")
    assert eps.matches("eps does not go inside: it goes outside the square root")
    assert stats.matches("It is not constant but depends on x, the mean.") is True


def test_formulas_keep_their_brackets_and_the_glossary_reads_them():
    _, _, eps, bias = keypoints.parse(POINTS)[0]
    assert eps.matches("The update is m_hat / (sqrt(v_hat) + eps).")
    assert eps.matches("p ← p − lr · m̂ / (√v̂ + ε)")
    assert not eps.matches("The update is m_hat / sqrt(v_hat + eps).")
    assert not eps.matches("p ← p − lr · m̂ / √(v̂ + ε)")
    assert bias.matches("m_hat = m / (1 - beta1^t), so the first steps are not too small.")
    assert bias.matches("We debias both moments.") and bias.matches("Divide m by one minus beta to the t.")
    assert not bias.matches("There is no bias correction.")


def test_the_questions_own_words_earn_nothing():
    point = keypoints.parse("- decay is decoupled: decoupl + decay; decoupl + gradient\n"
                            "- b: bb\n- c: cc\n- d: dd")[0][0]
    question = "Why is weight decay decoupled?"
    assert not point.matches("Weight decay is decoupled.", question)
    assert point.matches("Weight decay is decoupled from the gradient.", question)
    assert point.matches("Weight decay is decoupled.")  # without the question, it counts


def test_check_gives_the_evidence_or_why_not():
    rows, stats, eps, _ = keypoints.parse(POINTS)[0]
    text = "Each row of dx sums to zero. The mean does not depend on x. Eps outside the root."
    said, denied, listed = keypoints.check([rows, stats, eps], text)
    assert said.hit and said.evidence == "row … dx sums … zero" or "row" in said.evidence.lower()
    assert not denied.hit and denied.evidence is None and denied.why_not.startswith("denied: «")
    assert not listed.hit and listed.why_not.startswith("named, not claimed")
    nothing = keypoints.check([rows], "Something else entirely is said here.")[0]
    assert nothing.why_not == "nothing in the answer says it"


@pytest.mark.parametrize("gaming", [
    "The key ideas are the eps outside the square root, the bias correction, and the mean of the rows.",
    "Key points: the eps outside of the square root, a bias correction, the row sums.",
    "It's all about the eps outside the square root.",
    "I'd mention the eps outside the square root and the bias correction.",
    "The eps outside the square root, the bias correction and the row sums are the key points.",
    "AdamW has the bias correction, a decoupled weight decay, the eps outside the square root, and a master copy.",
    "bias correction / eps outside the square root / decoupled decay",
    "- eps outside the square root\n- bias correction",
    "1. eps outside the square root 2. bias correction",
    "(1) eps outside the square root (2) bias correction",
    "Decay decoupled; eps; outside the square root.",
])
def test_a_list_of_names_claims_nothing_however_it_is_dressed(gaming):
    """Gap 1: articles and a lead-in do not turn a list into a sentence; nor do slashes, bullets,
    numbers or semicolons (a claim in one item lends no context to the next)."""
    eps = keypoints.parse(POINTS)[0][2]
    assert not eps.matches(gaming)


def test_a_claim_after_a_lead_in_or_a_list_after_a_real_verb_still_counts():
    _, stats, eps, _ = keypoints.parse(POINTS)[0]
    assert eps.matches("The key point is that eps goes outside the square root.")
    assert stats.matches("It is about the mean: it depends on x.")
    assert roles("It is about a third more time.")["third"][0] == clauses.CLAIM  # an amount, not a topic
    tracked = roles("I'd track, for every layer, the norm of the gradient, the norm of the update, and their ratio.")
    assert tracked["norm"][0] == tracked["ratio"][0] == clauses.CLAIM  # what the verb acts on
    assert eps.matches("Epsilon, uh, you add it after you take the square root, not inside.")  # fillers, a tail


@pytest.mark.parametrize("said, verb, claimed", [
    ("Decouple the weight decay.", "decouple", False), ("Use bias correction.", "use", False),
    ("Skip the step.", "skip", False), ("Divide by N.", "divide", False), ("Save the index.", "save", False),
    ("Recompute P from the log-sum-exp.", "recompute", True), ("Put eps outside the square root.", "put", True),
    ("On overflow, skip the step.", "skip", True), ("If it overflows, skip the step.", "skip", True),
    ("Subtract the max, so nothing overflows.", "subtract", True), ("Accumulate, not overwrite.", "accumulate", True),
    ("Detach the hidden state every k steps.", "detach", True), ("Never take log(p).", "take", True),
    ("We decouple the weight decay.", "decouple", True),
])
def test_an_instruction_claims_only_when_it_relates_two_things(said, verb, claimed):
    """Gap 5: a verb and one name is a keyword with a verb in front; an argument more, a setting,
    a condition, a reason or a contrast makes it a statement."""
    assert (roles(said)[verb][0] == clauses.CLAIM) is claimed


def test_instead_of_and_rather_than_are_parts_that_deny_the_part_after_them():
    """Gap 2: a part may be the contrast itself; it counts only when it denies the part written
    after it, never the one before."""
    decoupled, summed = keypoints.parse("- decoupled: {weight_decay} + instead of|rather than + gradient|l2\n"
                                        "- summed: {sum} + not|never|instead of|rather than + {overwrite}\n"
                                        "- c: cc\n- d: dd")[0][:2]
    assert decoupled.matches("Weight decay shrinks the weights directly instead of going through the gradient.")
    assert not decoupled.matches("Weight decay is added to the gradient instead of being decoupled.")
    assert summed.matches("The scatter must accumulate, not overwrite.") and summed.matches("accumulate instead of overwriting")
    assert not summed.matches("The scatter must overwrite, not accumulate.")
    assert not summed.matches("overwrite instead of accumulating")
    stable = keypoints.parse("- ls: instead of log + p|probab\n- b: bb\n- c: cc\n- d: dd")[0][0]
    assert stable.matches("Take the loss from the log-softmax instead of log(p).")
    assert not stable.matches("Take the loss as log(p) instead of log-softmax.")  # the p it keeps


def test_plus_minus_is_kept_and_a_part_may_start_with_a_comma():
    """Gap 3."""
    assert keypoints.normalise("x = ±√y") == "x = + - sqrt y"
    sign = keypoints.parse("- s: {sign_lost}\n- b: bb\n- c: cc\n- d: dd")[0][0]
    assert sign.matches("From y alone, x = ±√y: two candidates.")
    comma = keypoints.parse("- p: max + , so nothing overflows\n- b: bb\n- c: cc\n- d: dd")[0][0]
    assert comma.matches("Subtract the max, so nothing overflows.")


def test_an_operator_is_the_answers_own_word_unless_the_question_used_it():
    """Gap 4: ``x.grad += g`` says what the question's ``x.grad`` did not."""
    acc = keypoints.parse("- acc: .grad +=\n- b: bb\n- c: cc\n- d: dd")[0][0]
    assert acc.matches("x.grad += g on every call.", "What does backward do to x.grad?")
    assert not acc.matches("x.grad += g", "Is it x.grad += g?")


def test_the_corpus_keeps_a_typed_list_as_a_list():
    answers, problems = keypoint_corpus.parse("# c\n\n## keywords bullets\n\n- eps outside the square root\n"
                                              "- bias correction\n\n## paraphrase terse\nA wrapped\n  line.\n")
    assert not problems and answers[0].text == "- eps outside the square root\n- bias correction"
    assert not keypoints.parse(POINTS)[0][2].matches(answers[0].text)
    assert answers[1].text == "A wrapped\nline."


@pytest.mark.parametrize("section, problem", [
    ("- one: a\n- two: b\n- three: c", "3 key points; write 4 to 7"),
    ("\n".join(f"- p{i}: w{i}" for i in range(8)), "8 key points"),
    ("- no colon here\n- two: b\n- three: c\n- four: d", "is not '- phrase: a way of saying it"),
    ("- one: ,,;a\n- two: b\n- three: c\n- four: d", "has no word or symbol to look for"),
    ("- one: {no_such_concept}\n- two: b\n- three: c\n- four: d", "no glossary concept no_such_concept"),
])
def test_parse_names_a_malformed_section(section, problem):
    assert any(problem in p for p in keypoints.parse(section)[1])


@pytest.mark.parametrize("question", list(QUESTIONS))
def test_every_question_hits_its_hired_answer_and_rejects_its_wrong_one(question):
    it = parsed(question)
    low, high = keypoints.POINTS
    assert low <= len(it.key_points) <= high and not it.problems
    assert all(keypoints.hits(it.key_points, it.hired, it.question)), "the hired answer hits every point"
    assert 2 * sum(keypoints.hits(it.key_points, it.wrong_quote, it.question)) < len(it.key_points)
    assert 2 * sum(keypoints.hits(it.key_points, it.question, it.question)) < len(it.key_points), \
        "repeating the question back is not an answer"
    assert not any(keypoints.hits(it.key_points, "", it.question))


@pytest.mark.parametrize("question", list(QUESTIONS))
def test_every_question_passes_its_adversarial_corpus(question):
    it = parsed(question)
    answers, problems = keypoint_corpus.load(question, REPO)
    assert not problems
    n = len(it.key_points)
    for answer in answers:
        hit = sum(keypoints.hits(it.key_points, answer.text, it.question))
        if answer.must_pass:
            assert hit >= keypoint_corpus.PASS_SHARE * n, f"{question} {answer.name}: {hit}/{n}"
        else:
            assert 2 * hit < n, f"{question} {answer.name}: {hit}/{n}"


@pytest.mark.parametrize("question", [q for q in QUESTIONS if q in PARAPHRASES])
def test_correct_answers_in_other_words_hit_half_the_points_or_more(question):
    """Shorter answers from earlier rounds, some telegraphic ("For categorical: Gumbel-softmax"):
    each says a few points in its own words, and the matcher credits what they claim."""
    it = parsed(question)
    found = [sum(keypoints.hits(it.key_points, a, it.question)) for a in PARAPHRASES[question]]
    assert all(3 * k >= len(it.key_points) for k in found), found
    assert sum(found) / len(found) >= 0.5 * len(it.key_points), f"{question}: {found}"


@pytest.mark.parametrize("question", [q for q in QUESTIONS if q in WRONG])
def test_wrong_answers_in_other_words_hit_fewer_than_half(question):
    it = parsed(question)
    for answer in WRONG[question]:
        assert 2 * sum(keypoints.hits(it.key_points, answer, it.question)) < len(it.key_points), answer


def _dressed(keywords: str) -> dict:
    """A corpus's keyword list as gaming candidates dress it: lead-ins, articles, bullets, slashes..."""
    items = [x.strip().rstrip(".") for x in re.split(r"[.,;]\s+|\n", keywords) if x.strip()]
    the = [f"the {x[0].lower()}{x[1:]}" if x[0].isalpha() else x for x in items]
    return {
        "lead-in": f"The key concepts are {', '.join(the[:-1])}, and {the[-1]}.", "bullets": "\n".join(
            "- " + x for x in items), "slashes": " / ".join(items), "semicolons": "; ".join(items),
        "numbered": " ".join(f"{i + 1}. {x}" for i, x in enumerate(items)),
        "numbered lines": "\n".join(f"{i + 1}) {x}" for i, x in enumerate(the)),
        "about": f"It's all about {', '.join(the)}.", "lead-out": f"{', '.join(the)} are the key points.",
        "use": " ".join(f"Use {x}." for x in the), "we have": f"We have {', '.join(the)}.",
        "mention": f"I'd mention {', '.join(the)}.", "i'd say": f"I'd say {', '.join(the)}.",
        "keywords": f"Keywords: {', '.join(items)}.", "and-chain": " and ".join(the) + ".",
        "fillers": f"So, um, basically, it's {', '.join(the)}, stuff like that.",
    }


@pytest.mark.parametrize("question", [q for q in QUESTIONS if keypoint_corpus.find(q, REPO)])
def test_every_questions_keyword_list_stays_under_half_however_it_is_dressed(question):
    it = parsed(question)
    answers, _ = keypoint_corpus.load(question, REPO)
    keywords = next(a.text for a in answers if a.kind == "keywords")
    for style, text in _dressed(keywords).items():
        assert 2 * sum(keypoints.hits(it.key_points, text, it.question)) < len(it.key_points), (style, text)


def _proved(it, question=None, root=None):
    report = QuestionReport("q")
    keypoint_proofs.prove(report, it, question, root)
    return report


def test_validate_proves_the_shipped_key_points_with_their_corpus():
    report = _proved(parsed("adamw_step"), "adamw_step", REPO)
    assert report.ok, report.text()
    assert "the hired answer hits all 7" in report.text() and "docs/interview_corpus/adamw_step.md" in report.text()


def _kit(tmp_path, question, corpus):
    """A questions folder with one shipped question and ``corpus`` as its corpus (None: none)."""
    import shutil
    root = tmp_path / "kit"
    (root / "solutions").mkdir(parents=True)
    shutil.copy(QUESTIONS[question], root / "solutions" / QUESTIONS[question].name)
    if corpus is not None:
        (root / keypoint_corpus.FOLDER).mkdir(parents=True)
        keypoint_corpus.path(question, root).write_text(corpus, encoding="utf-8")
    return root


def test_validate_fails_clearly_without_a_corpus(tmp_path):
    root = _kit(tmp_path, "routing_trap", None)
    report = _proved(parsed("routing_trap"), "my_pooling", root)  # a question of the folder's own
    assert not report.ok and "no adversarial corpus for the key points: write docs/interview_corpus/my_pooling.md" \
        in report.text()
    assert _proved(parsed("routing_trap"), "routing_trap", root).ok  # a copy of the kit's: the kit's corpus


def test_validate_names_the_missing_answers_and_the_loose_points(tmp_path):
    shipped = keypoint_corpus.path("routing_trap", REPO).read_text(encoding="utf-8")
    cut = shipped[:shipped.index("## trap tie-split")] + shipped[shipped.index("## paraphrase terse"):]
    loose = cut + ("\n## wrong\nThe gradient goes only to the winner, which the forward saves as the argmax;"
                   " overlapping windows add up, and a tie goes to the first maximum.\n")
    report = _proved(parsed("routing_trap"), "routing_trap", _kit(tmp_path, "routing_trap", loose))
    text = report.text()
    assert not report.ok and "## trap tie-split" in text and "## trap argmax-in-window" in text
    assert "1 answer(s) of docs/interview_corpus/routing_trap.md that must hit fewer than half" in text
    assert "wrong: 4/5; hit by:" in text


def test_validate_names_a_paraphrase_under_80_percent_and_a_malformed_heading(tmp_path):
    shipped = keypoint_corpus.path("softmax_ce", REPO).read_text(encoding="utf-8")
    weak = shipped + "\n## paraphrase vague\nIt is softmax minus one-hot.\n\n## nonsense\ntext\n"
    report = _proved(parsed("softmax_ce"), "softmax_ce", _kit(tmp_path, "softmax_ce", weak))
    assert "paraphrase(s) of docs/interview_corpus/softmax_ce.md hit under 80%" in report.text()
    assert "paraphrase vague: 1/5" in report.text() and "## nonsense: the kind is not one of" in report.text()


def test_validate_fails_a_point_the_hired_answer_misses():
    it = parsed("softmax_ce")
    it.key_points.append(keypoints.KeyPoint("a point nobody says", [["quaternion"]]))
    report = _proved(it)
    assert not report.ok and "the hired answer misses 1 of 6" in report.text()
    assert "a point nobody says" in report.text()


def test_validate_fails_points_the_wrong_answer_hits():
    it = parsed("layernorm_backward")
    for point in it.key_points[:3]:
        point.alternatives.append(["sqrt"])  # the wrong answer's claim says sqrt
        point._compiled = None
    report = _proved(it)
    assert not report.ok and "the wrong answer hits 3 of 6" in report.text()


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
