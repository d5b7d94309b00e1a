"""Where a wrong `dhs` differs is told along its own axes (layer, row, feature), not "axis 0 = 0,
axis 1 = 2": the sentence beside it already counts layers, so both speak of the same thing."""
from conftest import ANSWERS, graded_in_process


def test_dhs_differences_are_told_by_layer_row_and_feature():
    result = graded_in_process("residual_backward",
                               (ANSWERS / "residual_backward" / "identity_missing.py").read_text())
    told = [t.feedback for t in result.tests if not t.passed and "`dhs` differs at" in t.feedback]
    assert told
    for text in told:
        assert "axis 0" not in text and "layer l = " in text and "row n = " in text, text
