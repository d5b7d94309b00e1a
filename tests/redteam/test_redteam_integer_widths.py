"""Issue 43, class 4: a learner's CUDA kernel is judged with a GPU's integer widths.

Numba's simulator computes on Python's unbounded integers; the compiled kernel on int64 (numba-
cuda's typing: every integer operation gives at least 64 bits, signed when either operand is).
``(cuda.grid(1) << 62) >> 62`` scored 12/12 under the simulator and is wrong on a GPU. The
grader now rewrites its own copy of the kernel's syntax tree so that every integer operation
wraps as the GPU's does (grader/sandbox/kernel_integers.py): the kernel scores 0, the solution
keeps full marks, and the arithmetic agrees with numpy's int64 and uint64 and with what numba itself
compiles (its CPU target types integers by the same NBEP as numba-cuda) on generated operands.
"""
from __future__ import annotations

import ast
import operator

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from backprop_traps.grader.sandbox import kernel_integers
from backprop_traps.grader.sandbox.kernel_integers import int_op, widen
from redteam_kit import build, grade, mode  # noqa: F401 (mode: a fixture)

INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
UINT64 = st.integers(0, (1 << 64) - 1)
WRAPPING = ["add", "sub", "mul", "and_", "or_", "xor"]


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(WRAPPING), a=INT64, b=INT64)
def test_signed_arithmetic_is_numpy_int64s(name, a, b):
    with np.errstate(over="ignore"):
        want = int(getattr(operator, name)(np.int64(a), np.int64(b)))
    assert int_op(name, a, b) == want
    assert int_op(name, np.int32(a & 0x7FFFFFFF), b) == int_op(name, a & 0x7FFFFFFF, b)  # int32 widens


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(WRAPPING), a=UINT64, b=UINT64)
def test_unsigned_arithmetic_is_numpy_uint64s(name, a, b):
    with np.errstate(over="ignore"):
        want = int(getattr(operator, name)(np.uint64(a), np.uint64(b)))
    assert int_op(name, np.uint64(a), np.uint64(b)) == want


@settings(max_examples=300, deadline=None)
@given(a=INT64, shift=st.integers(0, 63))
def test_shifts_wrap_at_64_bits(a, shift):
    wrapped = int_op("lshift", a, shift)
    assert -(1 << 63) <= wrapped < (1 << 63)
    assert wrapped == int(np.left_shift(np.int64(a), np.int64(shift)))
    assert int_op("rshift", wrapped, shift) == int(np.right_shift(np.int64(wrapped), np.int64(shift)))


def test_floats_bools_and_arrays_keep_pythons_operators():
    assert int_op("add", 1.5, 2) == 3.5 and int_op("and_", True, False) is False
    assert (int_op("mul", np.arange(3), 2) == np.array([0, 2, 4])).all()
    assert int_op("neg", -(1 << 63), unary=True) == -(1 << 63)  # -INT64_MIN wraps to itself


def run(source: str, **values):
    module = widen(ast.parse(source))
    namespace = {kernel_integers.HELPER: int_op, **values}
    exec(compile(module, "<kernel>", "exec"), namespace)
    return namespace


def test_the_rewrite_reaches_expressions_augmented_names_and_nested_functions():
    ns = run("def f(i):\n    j = i\n    j <<= 62\n    k = -(i << 63)\n    return (i << 62) >> 62, j >> 62, k\n")
    assert ns["f"](2) == (-2, -2, 0)  # 2 << 63 wraps to 0
    assert ns["f"](1) == (1, 1, -(1 << 63))


def test_a_kernel_cannot_bind_the_helpers_name():
    from backprop_traps.grader.sandbox import kernel_source
    cells = [("[1]", "from numba import cuda\n@cuda.jit\ndef k(x):\n"
                     f"    {kernel_integers.HELPER} = 0\n    x[0] = 1\n", "")]
    program = kernel_source.extract(cells, ["k"])
    if "k" in program.refused:  # the whitelist may refuse it first: either way it is not compiled
        return
    with pytest.raises(kernel_source.Refused):
        kernel_source.build(program)


def test_a_kernel_right_only_on_unbounded_integers_scores_nothing(tmp_path, mode):
    mode("default")
    result = grade(build("kernel_int64_wrap", tmp_path))
    assert result.error is None and result.max_score == 12
    assert result.score == 0, [(t.name, t.points, t.feedback[:200]) for t in result.tests if t.passed]


def _compiled():
    """The same operations compiled by numba (its CPU target types integers by the same integer
    typing NBEP as numba-cuda: the oracle for what a compiled kernel computes)."""
    from numba import njit

    @njit(cache=False)
    def ops(a, b, s):
        return a + b, a - b, a * b, (a << s) >> s, a ^ b
    return ops


@settings(max_examples=200, deadline=None)
@given(a=INT64, b=INT64, s=st.integers(0, 63))
def test_the_wrap_is_what_numba_compiles_for_int64(a, b, s):
    got = _ops()(np.int64(a), np.int64(b), np.int64(s))
    mine = (int_op("add", a, b), int_op("sub", a, b), int_op("mul", a, b),
            int_op("rshift", int_op("lshift", a, s), s), int_op("xor", a, b))
    assert tuple(int(v) for v in got) == mine


@settings(max_examples=200, deadline=None)
@given(a=UINT64, b=UINT64, s=st.integers(0, 63))
def test_the_wrap_is_what_numba_compiles_for_uint64(a, b, s):
    ua, ub, us = np.uint64(a), np.uint64(b), np.uint64(s)
    got = _ops()(ua, ub, us)
    mine = (int_op("add", ua, ub), int_op("sub", ua, ub), int_op("mul", ua, ub),
            int_op("rshift", int_op("lshift", ua, us), us), int_op("xor", ua, ub))
    assert tuple(int(v) for v in got) == mine


_cache: list = []


def _ops():
    if not _cache:
        _cache.append(_compiled())
    return _cache[0]
