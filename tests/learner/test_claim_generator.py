"""The claim generator that `grade validate` proves key points with (grader/authoring/
claim_mutants.py, claim_paraphrases.py, claim_proofs.py), fed generated sentences: every mutant
changes the claim and is refused, every dress of its terms claims nothing, every paraphrase
keeps it."""
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backprop_traps.grader.authoring import claim_mutants as cm
from backprop_traps.grader.authoring import claim_paraphrases as cp
from backprop_traps.grader.authoring import claim_proofs, interview
from backprop_traps.grader.learner import directions, keypoints
from backprop_traps.grader.loading.questions import solution_notebooks

SUBJECTS = ["the scatter", "the kernel", "the optimizer", "the backward", "each thread", "the loop"]
VERBS = [("accumulates", "accumulate"), ("stores", "store"), ("recomputes", "recompute"), ("clips", "clip"),
         ("saves", "save"), ("shards", "shard")]
OBJECTS = ["the gradients", "the argmax", "the activations", "the moments", "the mask", "the index"]
PLACES = ["outside the loop", "before the step", "inside the kernel", "after the backward"]
SLOW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def claims(draw):
    """A sentence that states one thing, and a key point that says it."""
    subject, (verb, base), obj = draw(st.sampled_from(SUBJECTS)), draw(st.sampled_from(VERBS)), draw(
        st.sampled_from(OBJECTS))
    place = draw(st.sampled_from(PLACES))
    side = place.split()[0]
    sentence = f"{subject[0].upper()}{subject[1:]} {verb} {obj} {place}."
    point = keypoints.parse(f"- {subject.split()[-1]} {verb} {obj.split()[-1]} {place}: "
                            f"{base} + {obj.split()[-1]} + {side}\n- b: bb\n- c: cc\n- d: dd")[0][0]
    return sentence, point


@SLOW
@given(claims(), st.integers(0, 3))
def test_a_negated_or_prohibited_claim_is_refused(claim, style):
    sentence, point = claim
    assert point.matches(sentence)
    for mutant in (cm.negate(sentence, style), cm.prohibit(sentence, style)):
        assert mutant and mutant != sentence
        assert not point.matches(mutant), mutant


@SLOW
@given(claims())
def test_a_claim_said_the_other_way_round_is_refused(claim):
    sentence, point = claim
    swapped = cm.swap_directions(sentence)
    assert swapped and swapped != sentence
    assert not point.matches(swapped), swapped


@settings(deadline=None)
@given(st.lists(st.sampled_from(sorted(w for w, o in directions.opposites(roles=True).items()
                                       if directions.opposites(roles=True).get(o) == w and w.isalpha()
                                       and " " not in o)), min_size=1, max_size=4))
def test_swapping_directions_twice_gives_the_words_back(words):
    sentence = "It is " + " and ".join(words) + "."
    assert cm.swap_directions(cm.swap_directions(sentence)) == sentence


@settings(deadline=None)
@given(st.lists(st.one_of(st.integers(1, 10_000).map(str), st.sampled_from(["0.5", "1e-3", "2.5e4"])),
                min_size=1, max_size=4))
def test_every_quantity_grows_tenfold(numbers):
    sentence = "We need " + ", then ".join(f"{n} bytes" for n in numbers) + "."
    scaled = cm.scale_quantities(sentence)
    found = re.findall(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?", scaled)
    assert [float(f) for f in found] == pytest.approx([10 * float(n) for n in numbers])


def test_a_condition_is_turned_round():
    assert cm.invert_conditions("If it overflows, skip the step.") == "Unless it overflows, skip the step."
    assert cm.invert_conditions("The ReLU passes dh where z > 0.") == "The ReLU passes dh where z <= 0."
    assert cm.invert_conditions("Skip the step.") is None


TERMS = ["bias correction", "decoupled decay", "eps", "square root", "master copy", "argmax", "overlap", "sum",
         "ties", "winner", "atomicAdd", "gather", "gradient"]


@SLOW
@given(st.lists(st.sampled_from(TERMS), min_size=2, max_size=5, unique=True), st.sampled_from(cm.DRESSES))
def test_key_terms_in_any_dress_claim_nothing(terms, kind):
    point = keypoints.parse("- p: " + " + ".join(terms) + "\n- b: bb\n- c: cc\n- d: dd")[0][0]
    text = cm.dress(terms, kind)
    assert all(w in text for t in terms for w in t.split())
    assert not point.matches(text), text


@SLOW
@given(st.lists(claims(), min_size=2, max_size=4), st.sampled_from(cp.STYLES))
def test_a_paraphrase_keeps_every_claim(said, style):
    text = " ".join(sentence for sentence, _ in said)
    paraphrase = getattr(cp, style)(text)
    for _, point in said:
        assert point.matches(paraphrase), (style, paraphrase)


def test_the_passive_voice_and_the_synonyms_rewrite_what_they_know():
    assert cp.passive("Then we save the index in the forward.") == "Then the index is saved in the forward."
    assert cp.synonyms("eps goes outside the square root of the sqrt") == "eps goes outside the sqrt of the square root"


def test_validate_proves_a_question_by_generation():
    it = interview.parse(interview.read_notebook(solution_notebooks()["routing_trap"])[0])
    m = claim_proofs.measure(it)
    assert m.holds and m.mutants >= 10 and m.dresses >= 30 and m.paraphrases >= 4
    assert m.mutant_share < claim_proofs.MUTANT_SHARE and m.paraphrases_credited == m.paraphrases
