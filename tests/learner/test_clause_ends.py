"""Where a clause or a negation ends without a mark (grader/learner/clause_ends.py), the
consequence said without its verb, and the glossary's BatchNorm and gain apart from a norm's
weight: each as a statement a candidate makes, and the denial or list it must not become."""
from backprop_traps.grader.learner import clauses, keypoints


def said(text):
    """Each word of ``text``: (role, negated)."""
    r = clauses.read(text)
    return [(t.text, r.role[i], r.negated[i]) for i, t in enumerate(r.tokens) if t.kind == "word"]


def word(text, w):
    (found,) = [(role, negated) for t, role, negated in said(text) if t == w]
    return found


def test_a_negation_inside_a_subject_stops_at_the_main_verb():
    hired = "Noisy training that validation does not follow is BatchNorm left in training mode."
    assert word(hired, "follow") == (clauses.CLAIM, True)
    assert word(hired, "batchnorm") == (clauses.CLAIM, False)
    assert word("Training improving while validation never improves means BatchNorm is left in"
                " training mode.", "batchnorm")[1] is False
    assert word("A weight that is not decayed is a bias.", "bias")[1] is False


def test_a_denied_verb_with_its_object_keeps_the_denial():
    assert word("That does not mean the batch is repeated.", "repeated")[1] is True
    assert word("A smooth loss does not mean the same batch is repeated.", "batch")[1] is True
    assert word("The gradient does not vanish.", "vanish")[1] is True


def test_a_condition_without_its_comma_ends_where_a_subject_starts_a_verb():
    text = "If you use fan_out you keep the gradients' variance in the backward."
    assert word(text, "use")[0] == clauses.CONDITION and word(text, "keep")[0] == clauses.CLAIM
    assert word("When we add a layer we see a jump.", "see")[0] == clauses.CLAIM
    asked = "If we ask you to add it, do it."  # "you" is the object here: no split before it
    assert word(asked, "add")[0] == clauses.CONDITION


def test_a_statement_after_a_comma_is_its_own_clause():
    text = "That's not the optimiser getting worse, it's that the new layer changed the function."
    assert word(text, "optimiser")[1] is True
    assert word(text, "changed") == (clauses.CLAIM, False) and word(text, "function")[1] is False


def test_a_consequence_said_without_its_verb_is_the_claim_but_a_list_stays_a_list():
    assert word("If the loss is too smooth, probably the same batch every time.", "batch")[0] == clauses.CLAIM
    listed = said("If you ask me, identity path, gradient unchanged, every layer.")
    assert all(role != clauses.CLAIM for t, role, _ in listed if t in ("identity", "unchanged", "layer"))
    assert word("If identity, gradient unchanged.", "unchanged")[0] != clauses.CLAIM  # no condition stated


POINTS = """
- BatchNorm left in training mode: {batchnorm} + {train_mode}
- the gain gets a gradient: {gain} + {gradient}
- biases and norm weights are exempt: {bias} + {norm_weight} + {exempt}
- a: aa
"""


def test_batchnorm_and_a_gain_are_concepts_of_their_own_that_a_norm_weight_still_covers():
    bn, gain, exempt, _ = keypoints.parse(POINTS)[0]
    assert bn.matches("BatchNorm was left in training mode.") and bn.matches("The batch norm is still in train mode.")
    assert not bn.matches("LayerNorm was left in training mode.")
    assert gain.matches("The gain still gets a gradient.") and not gain.matches("The norm still gets a gradient.")
    assert exempt.matches("Biases and BatchNorm weights get no decay.")
    assert exempt.matches("Biases and gains are exempt from decay.")
