"""A failure report names what is wrong and never the fix (issue 22's rule; issue 50's low item:
residual_backward's identity-missing report showed its fix). A check may cut the explanation's
last period to add where it failed; the fix is kept out of the report all the same."""
from hypothesis import given, settings
from hypothesis import strategies as st

from backprop_traps.grader.engine.question import Question, Trap
from backprop_traps.grader.engine.sentences import rest_after_first
from backprop_traps.grader.engine.trap_feedback import split
from conftest import ANSWERS, graded_in_process

WORDS = st.text(alphabet=st.sampled_from("abcdefghij ,;()="), min_size=3, max_size=40).map(str.strip).filter(bool)


@settings(max_examples=60, deadline=None)
@given(symptom=WORDS, rule=WORDS, where=WORDS, cut=st.booleans())
def test_the_rule_after_the_symptom_never_reaches_the_report(symptom, rule, where, cut):
    explanation = f"Symptom {symptom}. Rule {rule}."
    question = Question("q", "t", traps=[Trap("the-trap", explanation)])
    check = type("Check", (), {"hints": ("first?", "last.")})()
    said = explanation.rstrip(".") + f" ({where})." if cut else f"It is wrong. {explanation}"
    feedback, hints = split(question, check, said, "the-trap")
    assert f"Rule {rule}" not in feedback
    assert f"Symptom {symptom}" in feedback
    assert rest_after_first(explanation) in hints


def test_identity_missing_reports_what_is_wrong_not_the_fix():
    result = graded_in_process("residual_backward", (ANSWERS / "residual_backward" / "identity_missing.py").read_text())
    named = [t for t in result.tests if t.trap == "identity-missing"]
    assert named
    for t in named:
        assert "Add it" not in t.feedback and "dh_l = dh_{l+1}" not in t.feedback, t.feedback


@settings(max_examples=60, deadline=None)
@given(symptom=WORDS, where=WORDS)
def test_named_failure_tells_an_explanation_its_head_holds_once(symptom, where):
    """The head already ends with the trap's explanation; its last '.' becomes '; input ...': the
    explanation is not appended a second time (reparameterisation's backward said it twice)."""
    from backprop_traps.grader.engine.question import Fail
    from backprop_traps.grader.engine.trap_feedback import named_failure
    explanation = f"Symptom {symptom}. Divide once."
    failure = Fail(f"`d` is wrong. {explanation}\n`d` differs at all 3 entries.", "the-trap")
    out = named_failure(failure, where, None, {}, None, lambda *a: None, {"the-trap": explanation})
    assert out.trap == "the-trap"
    assert out.feedback.count("Divide once") == 1, out.feedback
