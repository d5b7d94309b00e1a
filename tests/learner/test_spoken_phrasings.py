"""Spoken phrasings the matcher must read as a learner means them (found by answering questions
21-30 aloud in many voices): "doesn't depend on" is "independent of", "w.r.t." ends no sentence,
a relation's other side and the verb after a denied gerund are out of a negation's reach, a
part's bare `not` excuses no other denial, and the glossary knows `g @ v` and "can't recover the
sign"."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backprop_traps.grader.learner import keypoints
from backprop_traps.grader.learner.said import tokens

POINTS = keypoints.parse("""
- the sparse gradient's memory is independent of V: sparse|unique + independent
- a short shard makes the local divisor wrong: local batch + wrong|over-weight|not
- the input gradient needs an all-reduce: input + all-reduce
- BatchNorm left in training mode: batchnorm + training mode
- a Hessian-vector product is the gradient of the dot with v: {gradient} + {dot_v}
- x squared saves x, since y loses the sign: y|output + {sign_lost}
""")[0]
SPARSE, SHARD, INPUT, BATCHNORM, HVP, SIGN = POINTS


@pytest.mark.parametrize("said", [
    "The gradient is sparse, so its memory doesn't depend on V.",
    "Keep only the unique ids, so memory does not grow with the vocabulary.",
    "The gradient is sparse: its memory never scales with V.",
    "The table's gradient is sparse and its memory is independent of V.",
])
def test_not_depending_on_v_says_independent_of_v(said):
    assert SPARSE.matches(said)


@pytest.mark.parametrize("said", [
    "The gradient is sparse but its memory does depend on V.",
    "The gradient is not sparse: its memory is not independent of V.",
    "It is not true that the sparse gradient's memory doesn't depend on V.",
])
def test_depending_on_v_or_denying_independence_is_refused(said):
    assert not SPARSE.matches(said)


def test_a_parts_bare_not_excuses_no_other_denial():
    assert not SHARD.matches("With a short shard, dividing by the local batch is fine and doesn't over-weight it.")
    assert SHARD.matches("With a short shard, dividing by the local batch is not right.")
    assert SHARD.matches("With a short shard, dividing by the local batch over-weights its rows.")


@pytest.mark.parametrize("said", ["the gradient w.r.t. the input, so all-reduce it",
                                  "the gradient W.R.T. the input, so all-reduce it",
                                  "the gradient wrt the input, so all-reduce it"])
def test_wrt_is_with_respect_to_and_ends_no_sentence(said):
    assert "with respect to" in " ".join(t.text for t in tokens(said))
    assert INPUT.matches(said.replace("the gradient", "The gradient").replace(", so", ": each rank has a piece,"
                                                                                       " so we"))


@pytest.mark.parametrize("said", [
    "validation not tracking noisy training = BatchNorm still in training mode",
    "validation not tracking noisy training -> BatchNorm still in training mode",
    "Validation not tracking noisy training means BatchNorm is still in training mode.",
])
def test_a_relation_or_a_main_verb_ends_a_denial_on_its_left(said):
    assert BATCHNORM.matches(said)


@pytest.mark.parametrize("said", [
    "Not tracking the validation loss means BatchNorm is not in training mode.",
    "It does not mean BatchNorm was left in training mode.",
    "x = 1 -> BatchNorm is never in training mode",
])
def test_a_denial_on_the_right_still_denies(said):
    assert not BATCHNORM.matches(said)


@given(st.sampled_from(["=", "->", "=>"]), st.sampled_from(["validation", "the val loss", "eval"]),
       st.booleans())
@settings(max_examples=30, deadline=None)
def test_a_denial_reaches_across_no_relation_in_either_direction(op, subject, deny_right):
    right = "BatchNorm is not in training mode" if deny_right else "BatchNorm still in training mode"
    said = f"{subject} not improving {op} {right}"
    assert BATCHNORM.matches(said) is (not deny_right)


def test_the_glossary_reads_a_matrix_product_dot_and_a_lost_sign():
    assert HVP.matches("hvp = autograd.grad(g @ v, x): the gradient of g @ v")
    assert HVP.matches("Take the gradient of dot(g, v) with respect to x.")
    assert SIGN.matches("If you save y instead, you can't recover the sign of x.")
    assert not SIGN.matches("Saving y is fine: you can recover the sign of x.")


FUNCTION = keypoints.parse("""
- a custom Function is for a backward autograd would not derive: custom + only need|is for + straight-through
""")[0][0]


def test_a_denial_inside_a_when_clause_leaves_the_main_clause_standing():
    assert FUNCTION.matches("You only need a custom Function when autograd's derived backward isn't the one you "
                            "want, e.g. straight-through or a fused kernel.")
    assert not FUNCTION.matches("A custom Function is not the tool for straight-through.")
    assert not FUNCTION.matches("It is not true that a custom Function is for straight-through.")


def test_sync_is_a_verb_of_the_trade():
    once = keypoints.parse("- all-reduce once per step: once + sync|all-reduce")[0][0]
    assert once.matches("the eighth backward syncs once") and once.matches("The gradients sync once.")
    assert not once.matches("Sync, once, step.") and not once.matches("The gradients never sync once.")


ADD_AT = keypoints.parse("- np.add.at accumulates every occurrence: add.at + accumulat|every")[0][0]


@pytest.mark.parametrize("frame", ["I doubt that", "I doubt", "I really doubt that", "I'm sceptical that",
                                   "I am skeptical that", "We're doubtful whether", "It's unlikely that",
                                   "I question whether", "It is doubtful that"])
def test_a_doubting_frame_denies_what_it_frames(frame):
    assert not ADD_AT.matches(f"{frame} np.add.at accumulates every occurrence.")


@pytest.mark.parametrize("said", ["I'm sure np.add.at accumulates every occurrence.",
                                  "No doubt np.add.at accumulates every occurrence.",
                                  "I doubt plain indexing works, but np.add.at accumulates every occurrence."])
def test_certainty_and_a_claim_after_but_still_count(said):
    assert ADD_AT.matches(said)


@pytest.mark.parametrize("lead", ["We have the embedding backward:", "You need:", "It's:"])
def test_a_list_after_a_light_verb_and_a_colon_is_still_a_list(lead):
    assert not ADD_AT.matches(f"{lead} scatter-add, the repeated ids, the sum, the np.add.at, every occurrence, "
                              "the atomics.")


def test_a_colon_after_a_real_claim_still_elaborates_it():
    bytes_per = keypoints.parse("- Adam costs 16 bytes per parameter: 16 + bytes")[0][0]
    assert bytes_per.matches("Mixed-precision Adam costs per parameter: 16 bytes in all.")


RECOMPUTE = keypoints.parse("- checkpointing recomputes activations: checkpoint + recompute")[0][0]
NOTHING = keypoints.parse("- the other experts get nothing: unselected + nothing|zero")[0][0]


def test_a_verb_whose_object_is_nothing_is_denied_but_nothing_as_the_fact_counts():
    assert not RECOMPUTE.matches("Checkpointing keeps every activation and recomputes nothing.")
    assert RECOMPUTE.matches("Checkpointing drops activations and recomputes them in the backward.")
    assert NOTHING.matches("Unselected experts receive nothing from the gates.")
    assert NOTHING.matches("The unselected experts get nothing.")


def test_the_glossary_reads_ln_of_num_classes():
    ln_c = keypoints.parse("- compare the initial loss with ln C: {ln_c} + loss|initial")[0][0]
    assert ln_c.matches("Sanity check: step-0 loss ≈ ln(num_classes).")
    assert ln_c.matches("The initial loss should be log(n_classes).")
