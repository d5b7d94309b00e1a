"""The sentence that says where two arrays differ reads as English: the plural of a 1-D array's
axis "entry" is "entries" (it said "entrys" for a mistake confined to some entries)."""
import numpy as np

from backprop_traps.grader.engine.feedback import locate


def test_entries_confined_to_some_indices_read_as_entries():
    expected = np.zeros(6)
    got = expected.copy()
    got[[0, 3]] = 1.0
    text = locate("db1", got, expected)
    assert "only in entries 0 and 3 (of 0 to 5)" in text
    assert "entrys" not in text


def test_rows_still_take_a_plain_s():
    expected = np.zeros((4, 3))
    got = expected.copy()
    got[[1, 2]] = 1.0
    assert "only in rows 1 and 2" in locate("dW", got, expected)


def test_a_negative_zero_reads_as_zero():
    assert locate("d", np.array([-0.0]), np.array([0.5])).startswith("`d` is 0, expected 0.5")
    text = locate("d", np.array([-0.0, 1.0]), np.array([0.5, 1.0]))
    assert "yours 0," in text and "-0," not in text
