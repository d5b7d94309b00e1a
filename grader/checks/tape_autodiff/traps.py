"""tape_autodiff's traps: the known-wrong traversals, run on the reference's own
vector-Jacobian products, and how a wrong set of gradients is judged and named."""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.checks.tape_autodiff.probes import (BW, call_backward, describe, flat, one_line,
                                                paths_to_output, reference_values, split)
from backprop_traps.grader.engine import gradcheck
from backprop_traps.grader.engine.question import Fail, Trap

TRAPS = [
    Trap("fanout-overwrite", "A value used by several nodes (or twice by one node, like x * x) "
         "keeps only one node's share of its gradient: your backward assigns into the gradient "
         "buffer where it must add. By the chain rule the loss depends on that value through "
         "every use, so every consumer's share is summed into its buffer."),
    Trap("wrong-order", "Your backward walks the nodes in an order that is not reverse "
         "topological (e.g. the order they were recorded), so a node passes its gradient on "
         "before all of its consumers have added their shares. Every consumer is recorded after "
         "what it reads: walk the tape from the last node to the first."),
    Trap("no-zero-init", "Your backward remembers something between calls: gradient buffers "
         "from an earlier call reused without being cleared (a later call adds the earlier "
         "gradients onto its own), or results kept from an earlier call and handed back. "
         "Start every call from fresh zero buffers, created inside the function, and keep "
         "nothing from one call to the next."),
]
EXPLANATION = {t.id: t.explanation for t in TRAPS}


# -- the known-wrong traversals ----------------------------------------------------------
def wrong_walk(ctx, dout, graph, values, forward_order=False, overwrite=False, b_first=False):
    """A traversal with the reference's per-op backward and one or two of the mistakes.
    (Neither mistake is the right traversal: that one is ``ctx.ref.tape_backward``.)"""
    if not (forward_order or overwrite):
        raise ValueError("the right traversal is ctx.ref.tape_backward")
    n_in = len(values) - len(graph)
    grads = [np.zeros(np.shape(v)) for v in values]
    grads[-1] = grads[-1] + dout
    order = range(len(graph)) if forward_order else reversed(range(len(graph)))
    for k in order:
        op, i, j = graph[k]
        da, db = ctx.ref.op_backward(grads[n_in + k], op, values[i], values[j] if j >= 0 else None,
                                     values[n_in + k])
        shares = [(i, da)] + ([(j, db)] if j >= 0 else [])
        for s, share in (shares[::-1] if b_first else shares):
            grads[s] = share if overwrite else grads[s] + share
    return grads[:n_in]


def trap_answers(ctx, dout, graph, values):
    walks = [("fanout-overwrite", dict(overwrite=True)), ("fanout-overwrite", dict(overwrite=True, b_first=True)),
             ("wrong-order", dict(forward_order=True)), ("wrong-order", dict(forward_order=True, overwrite=True))]
    return [(trap, flat(wrong_walk(ctx, dout, graph, values, **kw))) for trap, kw in walks]



# -- judging the learner's gradients -----------------------------------------------------
def repeats_itself(ctx, dout, graph, values, inputs, first) -> bool:
    """Called again with the same arguments, does the learner's backward give the same?"""
    try:
        again = call_backward(ctx, dout, graph, values, inputs)
    except Fail:
        return True  # a second call that breaks says nothing about state
    return ctx.close(flat(again), flat(first))


def expect_grads(ctx, graph, inputs, dout, got=None):
    """The learner's grads (``got``, or a fresh call) must match finite differences of the
    reference forward, for every input at once; a wrong answer is named if it can be."""
    values = reference_values(ctx, graph, inputs)
    dout = np.asarray(dout, dtype=np.float64)
    grads = call_backward(ctx, dout, graph, values, inputs) if got is None else got
    f = lambda x: ctx.ref.tape_forward(graph, split(x, inputs))[-1]  # noqa: E731
    err = gradcheck.gradient_error(f, flat(inputs), dout, flat(grads), ctx.rng)
    if err <= gradcheck.GRAD_RTOL:
        return grads
    trap = next((t for t, wrong in trap_answers(ctx, dout, graph, values)
                 if ctx.close(flat(grads), wrong)), None)
    if trap is None and not repeats_itself(ctx, dout, graph, values, inputs, grads):
        trap = "no-zero-init"
    right = ctx.ref.tape_backward(dout, graph, values)
    bad = [n for n, (g, r) in enumerate(zip(grads, right)) if not ctx.close(g, r)]
    paths = paths_to_output(graph, len(values))
    where = ", ".join(f"grads[{n}] (v{n} reaches the output by {paths[n]} path{'s' * (paths[n] != 1)})"
                      for n in bad)
    first = bad[0] if bad else 0
    label = f"expected grads[{first}]: "
    detail = (f"\nWrong: {where}.\n{describe(graph, len(inputs))}\n"
              f"  {label}{one_line(right[first])}\n  {'yours:'.ljust(len(label))}{one_line(grads[first])}")
    why = f" {EXPLANATION[trap]}" if trap else ""
    raise Fail(f"`grads` from {BW} does not match finite differences (relative error {err:.2g}, "
               f"tolerance {gradcheck.GRAD_RTOL:g}).{why}{detail}", trap)

