"""A NaN or an infinity in an answer is told with where the first one is and what belongs there
(it said only how many), so a failing check always says where the values differ."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backprop_traps.grader.engine.context import first_non_finite


def test_the_first_infinity_and_the_expected_value():
    got = np.zeros((3, 4))
    got[2, 3] = np.inf
    got[2, 1] = np.nan
    expected = np.full((3, 4), 0.25)
    assert first_non_finite(got, expected) == " (the first is nan at [2, 1], where 0.25 is expected)"


def test_a_shape_mismatch_or_a_scalar_still_reads():
    assert "where" not in first_non_finite(np.array([np.nan, 1.0]), np.zeros(3))
    assert "(a scalar)" in first_non_finite(np.array(np.inf), np.array(1.0))


@settings(max_examples=50, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data())
def test_any_shape_names_a_non_finite_entry(shape, data):
    got = np.ones(shape)
    at = tuple(data.draw(st.integers(0, n - 1)) for n in shape)
    got[at] = data.draw(st.sampled_from([np.inf, -np.inf, np.nan]))
    text = first_non_finite(got, np.ones(shape))
    assert f"[{', '.join(map(str, at))}]" in text and "where 1 is expected" in text
