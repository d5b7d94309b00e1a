"""One comparison rule (issue 48 item 3): ``same_values``, ``same_as``, ``same_answer`` and
``unchanged`` in grader/engine/sameness.py, on generated arrays (NaN, infinities, -0.0, every
numeric dtype, 0-d to 3-d), and no private copy of them anywhere in the grader."""
import ast
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from backprop_traps.grader.engine import sameness
from backprop_traps.grader.engine.sameness import ATOL, RTOL, same_answer, same_as, same_values, unchanged

GRADER = Path(__file__).resolve().parents[2] / "grader"
DTYPES = st.sampled_from([np.float16, np.float32, np.float64, np.int8, np.int32, np.int64, np.uint8])
FLOATS = st.sampled_from([np.float16, np.float32, np.float64])
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)
ARRAYS = DTYPES.flatmap(lambda dt: hnp.arrays(dt, SHAPES))
FLOAT_ARRAYS = FLOATS.flatmap(lambda dt: hnp.arrays(dt, SHAPES))
FEW = settings(max_examples=150, deadline=None)


@FEW
@given(ARRAYS)
def test_an_array_is_the_same_as_itself_nan_inf_and_signed_zero_included(a):
    assert same_values(a, a.copy())
    assert unchanged(a, a.copy())
    assert same_as(a, {"itself": [a.copy()]}) == "itself"


@FEW
@given(FLOAT_ARRAYS.filter(lambda a: np.isfinite(a.astype(np.float64)).any()), st.data())
def test_nan_or_inf_where_the_wanted_value_is_finite_is_different(want, data):
    finite = np.flatnonzero(np.isfinite(want.astype(np.float64)))
    i = data.draw(st.sampled_from(list(finite)))
    bad = data.draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    got = want.astype(np.float64)
    got.reshape(-1)[i] = bad
    assert not same_values(got, want)
    assert not unchanged(want, got)
    assert same_as(got, {"trap": [want]}) is None
    assert not same_answer(got, want.astype(np.float64))


@FEW
@given(FLOAT_ARRAYS.filter(lambda a: (~np.isnan(a)).any()), st.data())
def test_a_finite_value_where_the_wanted_value_is_nan_is_different(want, data):
    i = data.draw(st.sampled_from(list(np.flatnonzero(~np.isnan(want)))))
    want = want.astype(np.float64)
    got = want.copy()
    want.reshape(-1)[i] = np.nan
    assert not same_values(got, want) and not unchanged(want, got)
    assert same_as(got, {"trap": [want]}) is None


@FEW
@given(hnp.arrays(np.float64, SHAPES, elements=st.floats(-1e6, 1e6)), st.data())
def test_nan_and_infinity_where_the_wanted_value_has_them_are_the_same(want, data):
    if want.size:
        where = data.draw(hnp.arrays(np.bool_, want.shape))
        special = data.draw(st.sampled_from([np.nan, np.inf, -np.inf]))
        want[where] = special
    got = want.copy()
    assert same_values(got, want) and unchanged(want, got) and same_answer(got, want)
    assert same_as(got, {"wrong": [want]}) == "wrong"


@FEW
@given(hnp.arrays(np.float64, SHAPES.filter(lambda s: np.prod(s) > 0),
                  elements=st.floats(allow_nan=False, allow_infinity=False, width=64)))
def test_the_opposite_infinity_is_different(want):
    want.reshape(-1)[0] = np.inf
    got = want.copy()
    got.reshape(-1)[0] = -np.inf
    assert not same_values(got, want) and not unchanged(want, got)


def test_negative_zero_is_zero():
    zero, minus = np.zeros((2, 3)), -np.zeros((2, 3))
    assert same_values(minus, zero) and unchanged(zero, minus) and same_as(minus, {"z": [zero]}) == "z"


@FEW
@given(hnp.arrays(np.float64, SHAPES, elements=st.floats(-1e3, 1e3)))
def test_tolerances_apply_to_finite_values_only_in_the_answer_comparisons(want):
    got = np.asarray(want + ATOL / 4 + np.abs(want) * RTOL / 4)  # a 0-d sum is a scalar
    assert same_values(got, want) and same_answer(got, want) and same_as(got, {"t": [want]}) == "t"
    if np.any(got != want):
        assert not unchanged(want, got)  # an argument must come back exactly
    assert not same_values(want + 1.0, want) or want.size == 0


@FEW
@given(ARRAYS, SHAPES)
def test_another_shape_is_never_the_same(a, shape):
    if shape == a.shape:
        return
    other = np.zeros(shape, dtype=a.dtype)
    assert not same_values(other, a) and not unchanged(a, other)
    assert same_as(other, {"t": [a]}) is None


@pytest.mark.parametrize("got", [None, "x", [1.0, 2.0], np.array(["a", "b"]), np.array([1 + 0j, 2]),
                                 np.array([object(), object()], dtype=object), np.array([True, False])])
def test_an_answer_of_an_odd_kind_is_no_trap_and_never_raises(got):
    assert same_as(got, {"t": [np.array([1.0, 0.0])]}) is None
    assert not same_values(got, np.array([1.0 + 0j, 2.0]))


def test_the_first_trap_in_order_wins_and_missing_forms_are_skipped():
    got = np.arange(4.0)
    forms = {"none-here": [None], "other": [np.ones(4)], "first": [np.arange(4.0)], "second": [got.copy()]}
    assert same_as(got, forms) == "first"
    assert same_as(got.astype(np.int64), forms) == "first"  # integers compare by value


def test_unchanged_compares_integers_exactly_and_containers_item_by_item():
    big = np.array([2 ** 60], dtype=np.int64)
    assert not unchanged(big, big + 1)  # float64 would round both to the same value
    args = {"w": np.array([1.0, np.nan]), "layers": [np.zeros(2), (3, "relu")]}
    echoed = {"w": np.array([1.0, np.nan]), "layers": [np.zeros(2), [3, "relu"]]}
    assert unchanged(args, echoed)
    assert not unchanged(args, {**echoed, "extra": 1})
    assert not unchanged([1, 2], [2, 1]) and not unchanged([1], [1, 1])
    assert unchanged(float("nan"), float("nan")) and not unchanged(1.0, float("nan"))


def test_the_three_questions_name_traps_with_the_engines_rule():
    from backprop_traps.grader.checks.batchnorm_backward import traps as bn
    from backprop_traps.grader.checks.layernorm_backward import traps as ln
    from backprop_traps.grader.checks.reparameterisation import traps as rp
    assert bn.same_as is ln.same_as is rp.same_as is sameness.same_as


def _functions(names: set[str]) -> list[str]:
    found = []
    for path in sorted(GRADER.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
                found.append(f"{path.relative_to(GRADER.parent)}:{node.lineno} {node.name}")
    return found


def test_each_comparison_is_written_once_in_the_engine():
    copies = {"same_as", "_same_as", "unchanged", "_unchanged", "_same_dicts", "same_values"}
    assert sorted(_functions(copies)) == sorted(
        f"grader/engine/sameness.py:{getattr(sameness, n).__code__.co_firstlineno} {n}"
        for n in ("same_as", "same_values", "unchanged"))
