"""update-in-low-precision says where the master weights differ (its sentence named the mistake
but showed no value), and a skipped step's failure says where its first NaN or inf is."""
from conftest import ANSWERS, graded_in_process


def test_low_precision_master_says_where():
    result = graded_in_process("adamw_step", (ANSWERS / "adamw_step" / "update_in_low_precision.py").read_text())
    named = [t for t in result.tests if not t.passed and t.trap == "update-in-low-precision"]
    assert named
    for t in named:
        assert "`master` differs at" in t.feedback and "The largest difference is at [" in t.feedback, t.feedback


def test_a_skip_that_is_not_clean_says_where_its_inf_is():
    result = graded_in_process("adamw_step", (ANSWERS / "adamw_step" / "skip_not_clean.py").read_text())
    told = [t.feedback for t in result.tests if not t.passed and t.trap == "skip-not-clean"]
    assert told
    assert any("NaN or infinite entries (the first is" in f for f in told) or all("differs at" in f for f in told), told
