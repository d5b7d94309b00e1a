"""Red team of the six newest questions' checks (embedding_backward ... rmsnorm_rope_backward):
an answer's values at float64's edge reach the grader's own arithmetic (its collectives' sums,
least-squares fits, the factor and location of a difference). Whatever overflows there, the
learner sees the report and nothing of the grader's: no RuntimeWarning, no grader path."""
from __future__ import annotations

import pytest

from redteam_kit import build
from report_kit import on_terminal


@pytest.mark.parametrize("name", ["report_float_edge_values"])
def test_overflow_in_the_graders_arithmetic_prints_nothing_of_the_grader(tmp_path, name):
    shown = on_terminal([str(build(name, tmp_path)), "--call-timeout", "8", "--total-timeout", "60"], tmp_path)
    assert "Score:" in shown, shown[-2000:]
    assert "RuntimeWarning" not in shown and "grader/" not in shown, shown[:3000]
