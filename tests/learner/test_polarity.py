"""Meaning over word lists (issue 46): a claim that states the other side of its point's
direction, another order of magnitude, a prohibition or a framed denial is refused; key terms set
in a frame that asserts nothing earn nothing; a negative word that is the fact itself, a formula
said aloud and a terse fact are credited; formulas are read in any notation."""
import pytest

from backprop_traps.grader.authoring import interview
from backprop_traps.grader.learner import directions, keypoints, phrase_states
from backprop_traps.grader.loading.questions import solution_notebooks

QUESTIONS = solution_notebooks()
POINTS = keypoints.parse("""
- a smaller batch gives higher variance: variance|noise + smaller|small + batch
- eps goes outside the square root: {eps} + {sqrt}
- the update-to-weight ratio sits near 1e-3: ratio + near|around|about
- the scatter accumulates, it does not overwrite: {sum} + scatter|gradients
""")[0]


def hit(question, text):
    it = interview.parse(interview.read_notebook(QUESTIONS[question])[0])
    return [k for k, v in enumerate(keypoints.check(it.key_points, text, it.question)) if v.hit]


@pytest.mark.parametrize("k, right, wrong", [
    (0, "A smaller batch has much higher variance.", "A smaller batch has lower variance."),
    (1, "eps goes outside the square root.", "eps goes inside the square root."),
    (2, "The ratio should be around 1e-3.", "The ratio should be around 1e-2."),
    (3, "The scatter accumulates the gradients.", "The scatter overwrites the gradients."),
])
def test_the_other_side_of_a_direction_or_another_magnitude_is_refused(k, right, wrong):
    assert POINTS[k].matches(right) and not POINTS[k].matches(wrong)
    assert "says" in keypoints.check([POINTS[k]], wrong)[0].why_not


def test_a_denied_opposite_is_no_inversion():
    assert POINTS[1].matches("eps goes outside the square root, not inside.")
    assert phrase_states.stated("x, not the output")[0] == frozenset()  # the phrase denies it, so it states nothing
    assert directions.opposite("Outside") == "inside" and directions.opposite("decoupled") is None


@pytest.mark.parametrize("text", [
    "It is not true that eps goes outside the square root.",
    "There's no need to say that, where it matters, eps goes outside the square root.",
    "Nobody should claim that eps goes outside the square root, so it is fine.",
    "You mustn't believe that eps goes outside the square root.",
])
def test_a_denying_frame_scopes_over_its_sentence(text):
    assert not POINTS[1].matches(text)


@pytest.mark.parametrize("text", [
    "So you mustn't subtract the max before exp.", "There's no need to subtract the row max before exponentiating.",
    "You don't have to subtract the max; nothing overflows.",
])
def test_a_modal_prohibition_denies(text):
    assert 2 not in hit("softmax_ce", text)


def test_neither_nor_and_a_condition_left_open_deny():
    assert 1 not in hit("softmax_ce", "Neither the Jacobian nor log-sum-exp is needed to derive it.")
    assert 4 not in hit("mlp_backprop", "The ReLU passes the gradient whether z > 0 or not.")
    assert 4 in hit("mlp_backprop", "The ReLU passes dh only where z > 0.")


@pytest.mark.parametrize("text", [
    "gradient | winner | overlap | sum | tie | first", "gradient / winner / overlap / sum / first",
    "gradient and winner and overlap and sum and ties and first.", "#argmax #overlap #sum #ties #first",
    "There is the question of the winner and where the gradient goes.",
    "Let's talk about the argmax, overlapping windows and ties.",
    "max pool\n  - argmax\n    - winner gets gradient\n  - overlap\n    - sum",
])
def test_key_terms_in_a_claim_free_frame_earn_nothing(text):
    assert len(hit("routing_trap", text)) <= 1


def test_a_negative_word_that_is_the_fact_is_credited():
    assert 0 in hit("routing_trap", "The other inputs in the window get nothing; the gradient goes to the max.")
    assert 0 in hit("routing_trap", "Only the winner of each window gets the gradient.")
    assert 1 in hit("routing_trap", "The inference kernel never stored that position, so the forward must save it.")


def test_formulas_said_aloud_and_terse_facts_are_claims():
    assert 2 in hit("training_memory", "fp32 master weights: 4 bytes a parameter.")
    assert {1, 2, 3} <= set(hit("training_memory", "bf16 weights: 2 bytes per parameter; bf16 grads: 2; "
                                                   "fp32 master: 4; Adam m and v: 8."))
    assert keypoints.normalise("dx equals the sum, dw plus equals g") == "dx = the sum dw += g"


@pytest.mark.parametrize("text", [
    "The gradient is σ(z) − e_y.", "The gradient is p − onehot(y).", "The gradient is softmax minus the one-hot.",
    "dL/dz = p - y.",
])
def test_softmax_minus_one_hot_in_any_notation(text):
    assert 0 in hit("softmax_ce", text)


def test_other_notations():
    assert 4 in hit("mlp_backprop", "dz = δ ⊙ [z > 0]")  # an Iverson bracket, delta for the gradient
    assert 1 in hit("softmax_ce", "Use LSE: the derivative of the LSE is the softmax.")
    assert 3 in hit("softmax_ce", "Compute the loss with log_softmax, not log of softmax.")
    assert 0 in hit("adamw_step", "m_hat = m / (1 - beta1^t), v_hat = v / (1 - beta2^t)")
