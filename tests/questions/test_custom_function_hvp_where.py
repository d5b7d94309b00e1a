"""hvp's backward-not-differentiable failure also says where Hv differs from the finite
differences of the gradient (it named the mistake but showed no value)."""
from conftest import ANSWERS, graded_in_process


def test_the_hvp_trap_says_where():
    result = graded_in_process("custom_function",
                               (ANSWERS / "custom_function" / "backward_not_differentiable.py").read_text())
    hvp = next(t for t in result.tests if t.name.startswith("hvp:"))
    assert not hvp.passed and hvp.trap == "backward-not-differentiable", (hvp.trap, hvp.feedback)
    assert "`Hv` differs at" in hvp.feedback and "The largest difference is at [" in hvp.feedback, hvp.feedback
