"""The smallest failing input, for any check that compares arrays (issue 38, item 3).

A check that fails on its own input (a sequence of T = 6 steps, a batch of 8) says where the
values differ; a learner understands the mistake far better on the smallest input that still
shows it: one step, one row. A question declares, per function, the sizes that can be cut
from the front of its inputs without making them inconsistent (``Question.shrink``), e.g. for
``rnn_backward(dhs, x, h0, hs, ...)``: ``{"T": [(0, 0), (1, 0), (3, 0)], "N": [(0, 1), (1, 1),
(2, 0), (3, 1)]}``, the argument and axis of each. A prefix of a sequence, or some rows of a
batch, is still a valid input (``hs[:t]`` is the forward of ``x[:t]``), so the reference's
answer on it is the right one.

After a failure, ``smallest`` takes the learner's last call of that function in the check and
cuts each size in turn, smallest first, keeping a cut whenever the learner's answer (the
output the check compared) still differs from the reference's on it. Each try is one call
of the learner's function in the sandbox and one of the reference here; the search stops at
``MAX_CALLS`` calls or its share of the submission's time (``feedback.allowance``), and only
describes. It runs only after a check failed.
"""
from __future__ import annotations

import inspect

import numpy as np

from backprop_traps.grader.engine import feedback

MAX_CALLS = 12


def _cut(args: list, places, n: int) -> list:
    out = list(args)
    for index, axis in places:
        value = out[index]
        if isinstance(value, np.ndarray) and value.ndim > axis:
            out[index] = np.ascontiguousarray(np.take(value, np.arange(n), axis=axis))
    return out


def _length(args, places) -> int | None:
    lengths = {args[i].shape[a] for i, a in places
               if i < len(args) and isinstance(args[i], np.ndarray) and args[i].ndim > a}
    return lengths.pop() if len(lengths) == 1 else None


def _pick(value, index):
    if index is None:
        return value
    return value[index] if isinstance(value, (tuple, list)) and len(value) > index else None


def smallest(ctx, fn: str, name: str) -> str | None:
    """"The smallest input where yours is still wrong: ..." for output ``name`` of ``fn``, from
    the learner's last call of ``fn`` in this check, cut along the sizes the question declares;
    None when nothing is declared, or no smaller input still fails."""
    sizes = (ctx.question.shrink or {}).get(fn)
    call = ctx.last_calls.get(fn)
    if not sizes or call is None:
        return None
    ref = getattr(ctx.ref, fn, None)
    if ref is None:
        return None
    outputs = ctx.output_names.get(fn)
    index = outputs.index(name) if outputs and name in outputs else None
    if outputs and index is None:
        return None
    args = list(call)
    start, budget = getattr(ctx.sandbox, "spent", 0.0), feedback.allowance(ctx.sandbox)
    calls, found = 0, None
    for size, places in sizes.items():
        length = _length(args, places)
        if not length or length <= 1:
            continue
        for n in range(1, length):
            if calls >= MAX_CALLS or getattr(ctx.sandbox, "spent", 0.0) - start > budget:
                break
            trial = _cut(args, places, n)
            try:
                want = _pick(ref(*trial), index)
            except Exception:  # noqa: BLE001 (a cut the reference refuses is not an input)
                continue
            calls += 1
            result = ctx.sandbox.call(fn, *trial)
            if not result.ok:
                if getattr(result, "kind", "") in ("timeout", "crash", "budget"):
                    return _shown(ctx, fn, found, name) if found else None
                continue
            got = _pick(result.value, index)
            wrong = feedback.differing(got, want)
            if wrong is not None and wrong.any():
                args, found = trial, (trial, want, got)
                break
    return _shown(ctx, fn, found, name) if found else None


def _shown(ctx, fn: str, found, name: str) -> str:
    args, want, got = found
    sizes = ", ".join(f"{size} = {_length(args, places)}" for size, places in ctx.question.shrink[fn].items()
                      if _length(args, places) is not None)
    try:
        params = list(inspect.signature(getattr(ctx.ref, fn)).parameters)
    except (TypeError, ValueError):
        params = []
    names = params[:len(args)] + [f"argument {i}" for i in range(len(params), len(args))]
    text = feedback.format_example(dict(zip(names, args)), want, got, f"`{name}`")
    if sizes:
        text = text.replace("still wrong:", f"still wrong ({sizes}):", 1)
    where = ctx.locate(name, got, want)
    if where:  # it says where, and by how much, along the question's own axes
        text = "\n".join(line for line in text.splitlines() if not line.startswith("  they differ at"))
    return text + (f"\n  {where}" if where else "")
