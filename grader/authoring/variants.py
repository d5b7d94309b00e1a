"""Wrong answers made automatically from the reference, to prove the checks can fail.

For every function the checks call, validate swaps the reference's function for a broken
copy and runs the checks that call it:

- ``zeros``: returns zeros shaped like the reference's answer (arrays, floats, tuples, lists);
- ``ignores-dout`` (backward functions only): uses ones instead of its upstream gradient;
- ``garbage``: returns random values shaped like the answer; a check that passes this one
  never reads the function's answer (e.g. it only checks that inputs stay unchanged);
- ``scribbles``: right answer, but it writes into its array inputs.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable

import numpy as np

from backprop_traps.grader.authoring.in_process import InProcessCaller


@dataclass(frozen=True)
class Variant:
    """One broken copy of one of the question's functions."""
    kind: str
    """zeros, ignores-dout, garbage or scribbles."""
    fn: str
    """The function it replaces."""
    wrong: Callable


def zeros_like_answer(value):
    """Zeros with the structure of ``value`` (the reference's answer)."""
    if isinstance(value, np.ndarray):
        return np.zeros_like(value)
    if isinstance(value, tuple):
        return tuple(zeros_like_answer(v) for v in value)
    if isinstance(value, list):
        return [zeros_like_answer(v) for v in value]
    if isinstance(value, dict):
        return {k: zeros_like_answer(v) for k, v in value.items()}
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (int, np.integer)):
        return 0
    if isinstance(value, (float, np.floating)):
        return 0.0
    if isinstance(getattr(value, "data", None), np.ndarray):  # a tensor: a copy holding zeros
        return _with_data(value, np.zeros_like(value.data))
    if isinstance(value, str):
        return ""  # a name answered with nothing (training_symptoms' diagnose)
    return value


def _with_data(value, data):
    import copy
    clone = copy.copy(value)
    clone.data = data
    return clone


def random_like_answer(value, rng):
    """Random values with the structure of ``value``: certainly not the right answer."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            return rng.standard_normal(value.shape).astype(value.dtype) + 3.0
        if value.dtype.kind in "iu":
            return rng.integers(0, 7, size=value.shape).astype(value.dtype)
        return rng.integers(0, 2, size=value.shape).astype(value.dtype)
    if isinstance(value, tuple):
        return tuple(random_like_answer(v, rng) for v in value)
    if isinstance(value, list):
        return [random_like_answer(v, rng) for v in value]
    if isinstance(value, dict):
        return {k: random_like_answer(v, rng) for k, v in value.items()}
    if isinstance(value, (bool, np.bool_)):
        return not value
    if isinstance(value, (int, np.integer)):
        return int(value) + 1
    if isinstance(value, (float, np.floating)):
        return float(value) + 3.0 + float(rng.standard_normal())
    if isinstance(value, str):
        return value + "?"  # not the name asked for
    return value


def upstream_position(fn_name: str, fn) -> int | None:
    """Where a backward function takes its upstream gradient: the first parameter, named
    ``d<something>`` (``dout``, ``da``), of a function whose name says ``backward``."""
    if "backward" not in fn_name:
        return None
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return None
    return 0 if params and params[0].startswith("d") else None


def _copied(arg):
    """Arrays copied, lists and tuples of them copied item by item, anything else as is."""
    if isinstance(arg, (list, tuple)):
        return type(arg)(_copied(item) for item in arg)
    return arg.copy() if isinstance(arg, np.ndarray) else arg


def _scribble(arg):
    if isinstance(arg, (list, tuple)):  # a list of arrays (a model's tensors): scribble on each
        for item in arg:
            _scribble(item)
    elif isinstance(arg, np.ndarray) and arg.size and arg.flags.writeable:
        arg[...] = arg + 1 if arg.dtype.kind != "b" else ~arg


def variants_of(fn_name: str, ref_fn, seed: int = 0) -> list[Variant]:
    """The broken copies of one reference function."""
    rng = np.random.default_rng(seed)

    def zeros(*args):
        return zeros_like_answer(ref_fn(*args))

    def garbage(*args):
        return random_like_answer(ref_fn(*args), rng)

    def scribbles(*args):
        answer = ref_fn(*[_copied(a) for a in args])
        for arg in args:
            _scribble(arg)
        return answer

    found = [Variant("zeros", fn_name, zeros), Variant("garbage", fn_name, garbage),
             Variant("scribbles", fn_name, scribbles)]
    position = upstream_position(fn_name, ref_fn)
    if position is not None:
        def ignores_dout(*args):
            args = list(args)
            args[position] = np.ones_like(np.asarray(args[position]))
            return ref_fn(*args)
        found.append(Variant("ignores-dout", fn_name, ignores_dout))
    return found


def caller_with(ref, variant: Variant) -> InProcessCaller:
    """The reference's functions with one of them replaced by ``variant``."""
    namespace = dict(vars(ref))
    namespace[variant.fn] = variant.wrong
    return InProcessCaller(namespace)


class RecordingCaller(InProcessCaller):
    """An ``InProcessCaller`` that notes which functions were called, and how."""

    def __init__(self, namespace):
        super().__init__(namespace)
        self.calls: list[str] = []

    def call(self, fn, *args, **kwargs):
        self.calls.append(fn)
        return super().call(fn, *args, **kwargs)
