"""Hidden checks for memory_budget: what to keep when activations do not fit.

The plan is judged by its recompute against the grader's exact search over every subset
(``probes.exact_search``, instances of up to 14 ops from the seed) and, on 40 ops, against the
reference's (the solution notebook, ``ctx.ref``); any plan with the least recompute within the
budget is right. The reversible block's gradients are compared with central differences of
the reference forward; the inverse with the block's true inputs.

The memory budget. ``revnet_loss_and_grads`` is called once, memory measured, on a stack of
L = 32 blocks whose halves are (N, D) = (2048, 32) float64: one half is A = 0.5 MiB, the
parameters and their gradients 32 * 2 * (32 * 32 + 32) * 8 B = 528 KiB (1.03 A) each. The
call's four inputs (x1, x2, t1, t2) arrive inside the measured call. The peak must stay within

    budget = (4 + 16) * A + params + grads = 22.1 A = 11.0 MiB,

whatever L is: the four inputs, and 16 halves for one block's working set (its outputs, their
gradients, the two tanh values, the two pre-activation gradients, the rebuilt inputs) and the
allocator. Measured on the 2-core reference machine, 3 grades each: the solution peaks at 14.0
to 14.1 A; keeping every block's pair peaks at 74.6 to 75.2 A (about 2L), named
``stores-everything`` from 0.75 * 2L halves on.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.checks.memory_budget import probes, traps
from backprop_traps.grader.checks.memory_budget.probes import (BWD, FWD, GRADS, INV, MEM_D, MEM_L, MEM_N, NET,
                                                               OFF, PLAN, SLACK, as_plan, describe,
                                                               exact_search, plan_problem)
from backprop_traps.grader.checks.memory_budget.traps import TRAPS
from backprop_traps.grader.engine.gradcheck import upstream
from backprop_traps.grader.engine.memory_verdict import peak_of
from backprop_traps.grader.engine.question import Fail, Question

MiB = 1024 * 1024
QUESTION = Question("memory_budget", "What to keep when activations do not fit: selective "
                    "checkpointing, reversible blocks, offloading", traps=TRAPS, difficulty="medium",
                    kinks={"budget-edge": "kept sizes adding up to exactly the budget (allowed)"},
                    memory_paths=("a stack of reversible blocks",), measured_calls=1)


# -- the plan -----------------------------------------------------------------------------
def plan_example(ctx):
    """The smallest instance (unique best plan: distinct costs) where the plan is still wrong."""
    def build(rng, L):
        sizes, costs, budget = plan_problem(rng, L)
        return {"sizes": sizes, "costs": np.round(costs, 2) + np.arange(L) * 1e-3, "budget": budget}
    return ctx.smallest_failure(PLAN, build, (2, 3, 4, 5, 6), lambda *a: exact_search(*a)[1],
                                pick=lambda v: np.asarray(v).astype(bool), name="keep")


def expect_plan(ctx, sizes, costs, budget):
    where = describe(sizes, costs, budget)
    keep = as_plan(ctx, ctx.call(PLAN, sizes, costs, budget), len(sizes), where)
    kept = int(sizes[keep].sum())
    best, best_plan = exact_search(sizes, costs, budget) if len(sizes) <= 16 else \
        (float(costs[~ctx.ref.checkpoint_plan(sizes, costs, budget)].sum()), ctx.ref.checkpoint_plan(sizes, costs, budget))
    mine = float(costs[~keep].sum())
    differ = (f"yours keeps ops {[int(i) for i in np.flatnonzero(keep)]}, a best plan keeps "
              f"{[int(i) for i in np.flatnonzero(best_plan)]}")
    if kept > budget:
        raise Fail(f"On {where}: the kept sizes add up to {kept}, over the budget of {budget} "
                   f"({differ}). {QUESTION.trap('over-budget').explanation}", "over-budget")
    if mine <= best + 1e-9 * max(1.0, best):
        return
    example = plan_example(ctx)
    head = (f"On {where}: your plan recomputes {mine:.6g}, the best within the budget recomputes "
            f"{best:.6g} ({differ}).")
    if is_greedy(mine, sizes, costs, budget) and all(
            is_greedy(float(c[~as_plan(ctx, ctx.call(PLAN, z, c, b), len(z), describe(z, c, b))].sum()), z, c, b)
            for z, c, b in greedy_probes()):
        raise Fail(f"{head} {QUESTION.trap('greedy-ratio').explanation}" + (f"\n{example}" if example else ""),
                   "greedy-ratio")
    if kept < budget and best_plan is not None and int(sizes[best_plan].sum()) == budget:
        head += " The best plan uses the whole budget; yours leaves some of it unused."
    raise Fail(head + (f"\n{example}" if example else ""))


def is_greedy(recompute, sizes, costs, budget) -> bool:
    return any(np.isclose(recompute, float(costs[~g].sum()), rtol=1e-12)
               for g in traps.greedy_plans(sizes, costs, budget))


GREEDY_PROBES = [  # greedy recomputes more than the best plan at this budget and at b - 2, b - 1, b + 1
    ([4, 4, 1, 1, 3], [7.4, 4.7, 6.1, 7.6, 6.8], 8), ([5, 6, 1, 6, 2], [5.8, 3.1, 2.0, 0.5, 2.5], 7),
    ([1, 3, 7, 7, 7, 1], [1.5, 1.4, 7.2, 3.5, 2.5, 3.4], 25),
]


def greedy_probes():
    """Instances on which the greedy plans recompute more than the best one, and differ from the
    best plan one or two units off the budget: an answer named greedy-ratio must match greedy on
    every one of them, not on one by chance (an exact search with a budget one off does not)."""
    return [(np.array(z, dtype=np.int64), np.array(c), b) for z, c, b in GREEDY_PROBES]


HAND_MADE = [  # (sizes, costs, budget): the best cost per unit first shuts out a better pair
    ([6, 5, 5], [7.2, 5.5, 5.5], 10),
    ([4, 3, 3, 2], [6.0, 4.2, 4.2, 0.5], 6),
    ([5, 4, 4, 1], [6.0, 4.5, 4.5, 0.2], 8),
]


@QUESTION.check("checkpoint_plan on hand-made instances", points=2, hints=(
    "With sizes 6, 5, 5, costs 7.2, 5.5, 5.5 and a budget of 10, which ops would you keep, and what "
    "is recomputed?",
    "Each op is kept or not, once: this is a 0/1 knapsack over the budget.",
))
def plan_by_hand(ctx):
    for sizes, costs, budget in HAND_MADE:
        expect_plan(ctx, np.array(sizes, dtype=np.int64), np.array(costs), budget)


@QUESTION.check("checkpoint_plan against an exact search (random instances)", points=3, hints=(
    "Is your plan ever beaten by another subset that fits? Try every subset on a small instance.",
    "best[m] = the most recompute you avoid keeping at most m units; add ops one at a time.",
    "Each op may be kept once: update best[m] from the previous op's row, not from the one you "
    "are filling.",
))
def plan_exact(ctx):
    for L in (5, 8, 10, 12, 14, 14):
        expect_plan(ctx, *plan_problem(ctx.rng, L))
    expect_plan(ctx, *plan_problem(ctx.rng, 40))


@QUESTION.check("checkpoint_plan at the edges of the budget", points=1, kinks=("budget-edge",), hints=(
    "What may you keep with a budget of 0, and with a budget larger than everything?",
    "May the kept sizes add up to exactly the budget?",
))
def plan_edges(ctx):
    sizes, costs, _ = plan_problem(ctx.rng, 7)
    expect_plan(ctx, sizes, costs, 0)
    expect_plan(ctx, sizes, costs, int(sizes.sum()) + 5)
    # a best plan that fills the budget exactly: two ops of 4 and 3 at a budget of 7
    expect_plan(ctx, np.array([4, 3, 5, 6], dtype=np.int64), np.array([3.0, 2.5, 1.0, 2.0]), 7)


# -- the reversible block -----------------------------------------------------------------
def stacked(f):
    """f(...) -> (y1, y2) as one (2, N, D) array, for finite differences."""
    return lambda *a: np.stack(f(*a))


@QUESTION.check("rev_forward: the block's outputs", points=1, hints=(
    "y1 first, from x1 and x2; then y2, from x2 and the new y1.",
))
def forward_values(ctx):
    for N, D in ((5, 4), (1, 3)):
        x1, x2 = probes.halves(ctx.rng, N, D)
        blk = probes.block(ctx.rng, D)
        got = ctx.unpack(ctx.call(FWD, x1, x2, *blk), 2, FWD, "y1, y2")
        for k, (name, g, w) in enumerate(zip(("y1", "y2"), got, ctx.ref.rev_forward(x1, x2, *blk))):
            ctx.expect_array(name, g, w, FWD, example=lambda k=k: ctx.smallest_failure(
                FWD, block_inputs, (1, 2, 3), lambda *a, k=k: ctx.ref.rev_forward(*a)[k],
                pick=lambda v, k=k: v[k], name=("y1", "y2")[k]))


def block_inputs(rng, size):
    """rev_forward's arguments on an (N, D) = (size, size) block."""
    x1, x2 = probes.halves(rng, size, size)
    return {"x1": x1, "x2": x2, **dict(zip(("Wf", "bf", "Wg", "bg"), probes.block(rng, size)))}


def block_outputs(rng, size):
    """rev_inverse's arguments: a block's outputs, and the inputs they came from (shown)."""
    args = block_inputs(rng, size)
    y1, y2 = rev_forward_of(args.pop("x1"), args.pop("x2"), list(args.values()))
    return {"y1": y1, "y2": y2, **args}


@QUESTION.check("rev_inverse: the inputs rebuilt from the outputs", points=2, hints=(
    "Of the two couplings, which one can you undo knowing only y1 and y2?",
    "Undo them in the reverse of the forward's order.",
))
def inverse(ctx):
    for N, D in ((6, 4), (3, 5)):
        x1, x2 = probes.halves(ctx.rng, N, D)
        blk = probes.block(ctx.rng, D)
        y1, y2 = ctx.ref.rev_forward(x1, x2, *blk)
        got = ctx.unpack(ctx.call(INV, y1, y2, *blk), 2, INV, "x1, x2")
        wrong = traps.inverse_in_forward_order(y1, y2, *blk)
        for k, (name, g, w, t) in enumerate(zip(("x1", "x2"), got, (x1, x2), wrong)):
            ctx.expect_array(name, g, w, INV, traps={"inverse-order": t} if name == "x1" else None,
                             example=lambda k=k: ctx.smallest_failure(
                                 INV, block_outputs, (1, 2, 3), lambda *a, k=k: ctx.ref.rev_inverse(*a)[k],
                                 pick=lambda v, k=k: v[k], name=("x1", "x2")[k]))


def check_block_backward(ctx, N, D):
    x1, x2 = probes.halves(ctx.rng, N, D)
    blk = probes.block(ctx.rng, D)
    y1, y2 = ctx.ref.rev_forward(x1, x2, *blk)
    dy1, dy2 = upstream(ctx.rng, (N, D)), upstream(ctx.rng, (N, D))
    got = ctx.unpack(ctx.call(BWD, dy1, dy2, y1, y2, *blk), 8, BWD, "x1, x2, " + ", ".join(GRADS))
    wrong = traps.inverse_in_forward_order(y1, y2, *blk)
    for k, name in enumerate(("x1", "x2")):
        ctx.expect_array(name, got[k], (x1, x2)[k], BWD, traps={"inverse-order": wrong[0]} if k == 0 else None,
                         example=lambda k=k: ctx.smallest_failure(
                             BWD, block_args, (1, 2, 3), lambda *a, k=k: ctx.ref.rev_backward(*a)[k],
                             pick=lambda v, k=k: v[k], name=("x1", "x2")[k]))
    forms = traps.backward_without_cross_term(dy1, dy2, y1, y2, *blk)
    args = [x1, x2, *blk]
    dout = np.stack((dy1, dy2))
    exact = ctx.ref.rev_backward(dy1, dy2, y1, y2, *blk)[2:]
    for i, name in enumerate(GRADS):
        def f(v, i=i):
            changed = list(args)
            changed[i] = v
            return np.stack(ctx.ref.rev_forward(*changed))
        ctx.expect_gradient(name, got[2 + i], f, args[i], dout, BWD, reference=exact[i],
                            traps={"cross-term-dropped": forms[i]} if name == "dx1" else None,
                            example=lambda i=i: ctx.smallest_failure(
                                BWD, block_args, (1, 2, 3), lambda *a: ctx.ref.rev_backward(*a)[2 + i],
                                pick=lambda v, i=i: v[2 + i], name=GRADS[i]))


def block_args(rng, size):
    """rev_backward's arguments on an (N, D) = (size, size) block, for a small failing example."""
    x1, x2 = probes.halves(rng, size, size)
    blk = probes.block(rng, size)
    y1, y2 = rev_forward_of(x1, x2, blk)
    names = ("Wf", "bf", "Wg", "bg")
    return {"dy1": upstream(rng, (size, size)), "dy2": upstream(rng, (size, size)), "y1": y1, "y2": y2,
            **dict(zip(names, blk))}


def rev_forward_of(x1, x2, blk):
    Wf, bf, Wg, bg = blk
    y1 = x1 + np.tanh(x2 @ Wf + bf)
    return y1, x2 + np.tanh(y1 @ Wg + bg)


@QUESTION.check("rev_backward: gradients from the outputs alone, against finite differences", points=3,
                hints=(
    "y1 reaches the loss twice: directly, and through y2 = x2 + G(y1).",
    "Go back through the couplings in reverse: G's first (it gives y1 its second share), then F's.",
    "The weight gradients need each tanh's input: rebuild x2 first, from y2 and y1.",
))
def block_backward(ctx):
    check_block_backward(ctx, 6, 4)
    check_block_backward(ctx, 2, 3)


@QUESTION.check("revnet_loss_and_grads: a stack of blocks against finite differences", points=2, hints=(
    "The loss divides by N, the batch size, and reads both halves of the last block's output.",
    "Walk the blocks in reverse; each block's backward gives the outputs of the one before it.",
))
def stack_grads(ctx):
    blocks, x1, x2, t1, t2 = probes.stack(ctx.rng, 3, 5, 3)
    where = "On a stack of 3 blocks (N = 5, D = 3): "
    loss, grads = probes.learner_stack_grads(ctx, ctx.call(NET, blocks, x1, x2, t1, t2), 3, where)
    ref_loss = ctx.ref.revnet_loss_and_grads(blocks, x1, x2, t1, t2)[0]
    ctx.expect_array("loss", loss, np.float64(ref_loss), NET, counts={"N, the batch size": 5})
    reference = ctx.ref.revnet_loss_and_grads(blocks, x1, x2, t1, t2)[1]
    for b in range(3):
        for k, name in enumerate(("dWf", "dbf", "dWg", "dbg")):
            def f(v, b=b, k=k):
                changed = [list(p) for p in blocks]
                changed[b][k] = v
                return ctx.ref.revnet_loss_and_grads([tuple(p) for p in changed], x1, x2, t1, t2)[0]
            ctx.expect_gradient(f"{name} of block {b}", grads[b][k], f, blocks[b][k], np.float64(1.0), NET,
                                reference=reference[b][k], example=lambda: ctx.smallest_failure(
                                    NET, stack_args, (1, 2), lambda *a: probes.flat(
                                        ctx.ref.revnet_loss_and_grads(*a)[1]),
                                    pick=lambda v: probes.flat(v[1]), name="(dWf, dbf, dWg, dbg), flattened"))


def stack_args(rng, size):
    """A stack of one block of (N, D) = (size, 2), for a small failing example: (the arguments,
    what the example shows)."""
    blocks, x1, x2, t1, t2 = probes.stack(rng, 1, size, 2)
    args = {"blocks": blocks, "x1": x1, "x2": x2, "t1": t1, "t2": t2}
    shown = {**dict(zip(("Wf", "bf", "Wg", "bg"), blocks[0])), "x1": x1, "x2": x2, "t1": t1, "t2": t2}
    return args, shown


@QUESTION.check(f"peak memory of a stack of {MEM_L} blocks within budget", points=3,
                memory=("a stack of reversible blocks",), hints=(
    "What does the backward of block i need that you cannot rebuild from block i's outputs?",
    "A name that still points at an array keeps it alive: rebind x1, x2 as you go.",
))
def memory(ctx):
    blocks, x1, x2, t1, t2 = probes.stack(ctx.rng, MEM_L, MEM_N, MEM_D, scale=0.5)
    where = f"On the {MEM_L}-block stack (N = {MEM_N}, D = {MEM_D}): "
    reference = ctx.meanwhile(ctx.ref.revnet_loss_and_grads, blocks, x1, x2, t1, t2)
    result = ctx.call(NET, blocks, x1, x2, t1, t2, measure_memory=True)
    _, grads = probes.learner_stack_grads(ctx, result.value, MEM_L, where)
    expected = reference()[1]
    try:
        got = probes.flat(grads)
        right = got.shape == probes.flat(expected).shape and ctx.close(got, probes.flat(expected))
    except (TypeError, ValueError):
        right = False
    if not right:
        raise Fail(f"{where}the gradients are wrong (the check on a small stack says where). "
                   "Memory is judged once the gradients are right.")
    peak = peak_of(result)
    half, budget = MEM_N * MEM_D * 8, probes.memory_budget(MEM_L, MEM_N, MEM_D)
    if peak <= budget:
        return
    kept = peak / half
    over = (f"{where}your call peaked at {peak / MiB:.1f} MiB, about {kept:.0f} halves of shape "
            f"({MEM_N}, {MEM_D}), over the budget of {budget / MiB:.2f} MiB (4 inputs + {SLACK} "
            "halves, plus parameters and gradients), which does not grow with the number of blocks.")
    if kept >= 0.75 * 2 * MEM_L:
        raise Fail(f"{over} {QUESTION.trap('stores-everything').explanation}", "stores-everything")
    raise Fail(f"{over} That is fewer than a pair per block, but more than one block at a time needs: "
               "keep only the current block's outputs and their gradients.")


# -- offloading -----------------------------------------------------------------------------
OFFLOAD_CASES = [  # nbytes, compute_s, GB/s, overlap: PCIe against HBM, copies hidden or not
    (12e9, 0.35, 30.0, True), (12e9, 0.35, 30.0, False), (12e9, 0.35, 3000.0, False),
    (3e9, 0.35, 25.0, True), (6e8, 0.02, 32.0, True),
]


@QUESTION.check("offload_step_time: transfer and step time, overlapped or not", points=2, hints=(
    "How many times does an offloaded activation cross the link between its forward and its backward?",
    "Two things that run side by side take as long as the longer of them.",
))
def offload(ctx):
    for nbytes, compute, bandwidth, overlap in OFFLOAD_CASES:
        where = f"{nbytes:.3g} bytes over {bandwidth:g} GB/s, compute {compute:g} s, overlap={overlap}"
        got = ctx.unpack(ctx.call(OFF, nbytes, compute, bandwidth, overlap), 2, OFF, "transfer_s, step_s")
        want = ctx.ref.offload_step_time(nbytes, compute, bandwidth, overlap)
        ok = all(ctx.as_array(n, g, np.float64(w), OFF) is not None and np.isclose(float(g), w, rtol=1e-9)
                 for n, g, w in zip(("transfer_s", "step_s"), got, want))
        if ok:
            continue
        head = (f"For {where}: yours gives transfer {float(got[0]):.6g} s and step {float(got[1]):.6g} s; "
                f"expected {want[0]:.6g} s and {want[1]:.6g} s.")
        for trap_id, form in traps.offload_forms(nbytes, compute, bandwidth, overlap).items():
            if all(np.isclose(float(g), f, rtol=1e-9) for g, f in zip(got, form)):
                raise Fail(f"{head} {QUESTION.trap(trap_id).explanation}", trap_id)
        raise Fail(head)


@QUESTION.check("inputs left unchanged (and the answers right)", points=1, hints=(
    "Does any function write into its arguments (`+=`, `-=` on y1, dy1, or a weight)?",
))
def inputs_unchanged(ctx):
    x1, x2 = probes.halves(ctx.rng, 4, 3)
    blk = probes.block(ctx.rng, 3)
    y1, y2 = ctx.ref.rev_forward(x1, x2, *blk)
    dy1, dy2 = upstream(ctx.rng, (4, 3)), upstream(ctx.rng, (4, 3))
    blocks, s1, s2, t1, t2 = probes.stack(ctx.rng, 2, 4, 3)
    sizes, costs, budget = plan_problem(ctx.rng, 6)
    names = ["Wf", "bf", "Wg", "bg"]

    def same(expected):
        return lambda got: all(np.allclose(np.asarray(g, dtype=float), np.asarray(e, dtype=float))
                               for g, e in zip(got, expected)) if isinstance(got, (tuple, list)) else False
    ctx.expect_inputs_unchanged([
        (FWD, (x1, x2, *blk), ["x1", "x2", *names], ctx.ref.rev_forward(x1, x2, *blk)),
        (INV, (y1, y2, *blk), ["y1", "y2", *names], ctx.ref.rev_inverse(y1, y2, *blk)),
        (BWD, (dy1, dy2, y1, y2, *blk), ["dy1", "dy2", "y1", "y2", *names],
         same(ctx.ref.rev_backward(dy1, dy2, y1, y2, *blk))),
        (NET, (blocks, s1, s2, t1, t2), ["blocks", "x1", "x2", "t1", "t2"],
         lambda got: isinstance(got, (tuple, list)) and len(got) == 2 and np.isclose(
             float(got[0]), ctx.ref.revnet_loss_and_grads(blocks, s1, s2, t1, t2)[0])),
        (PLAN, (sizes, costs, budget), ["sizes", "costs"],
         lambda got: isinstance(got, np.ndarray) and got.shape == sizes.shape
         and float(costs[~got.astype(bool)].sum()) <= exact_search(sizes, costs, budget)[0] + 1e-9
         and int(sizes[got.astype(bool)].sum()) <= budget),
    ])
