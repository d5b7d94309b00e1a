"""Hidden checks for tensor_parallel_linear: column- and row-parallel linear layers on P
simulated ranks, and Megatron's MLP block made of one of each.

A value on the ranks is a list of P arrays (docs/questions/tensor_parallel_linear.md). Every
gradient is checked against central differences of the reference forward (``ctx.ref``, the
solution notebook), rank by rank; a replicated one must be whole on every rank. The
communication is checked too: the grader does every ``all_reduce`` itself
(``collective.AllReduce``, after the learner's code loads), counts the calls of each graded
call, and asks whether the replicated outputs came out of its sums. Wrong answers are named
by equality with a trap's form on the same inputs (``traps``), or, with right values, by
the count; each trap has a runnable wrong answer in tests/answers/tensor_parallel_linear/.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.checks.tensor_parallel_linear import collective, probes, traps
from backprop_traps.grader.checks.tensor_parallel_linear.probes import counted, expect_calls, ranks
from backprop_traps.grader.checks.tensor_parallel_linear.traps import (COL_BWD, COL_FWD, MLP_BWD, MLP_FWD,
                                                                      ROW_BWD, ROW_FWD)
from backprop_traps.grader.engine.gradcheck import upstream
from backprop_traps.grader.engine.question import Fail, Question

QUESTION = Question("tensor_parallel_linear", "Tensor-parallel linear layers: where the all-reduces go "
                    "(Megatron's f and g)", traps=traps.TRAPS, difficulty="hard", kinks={})
QUESTION.services = collective.services
DOUBLE = QUESTION.trap("double-all-reduce")


def on(P, *sizes) -> str:
    return f"P={P} ranks, " + ", ".join(f"{k}={v}" for k, v in sizes)


def annotate(at: str, run):
    """Run ``run()``; a failure's feedback starts with the input it failed on."""
    try:
        return run()
    except Fail as failure:
        raise Fail(f"On {at}: {failure.feedback}", failure.trap) from None


def replaced(items, r, value) -> list:
    changed = list(items)
    changed[r] = value
    return changed


@QUESTION.check("column_parallel_forward: each rank's columns of the output", points=1, hints=(
    "Rank r holds W's columns r * D_out / P up to (r + 1) * D_out / P, and the whole input.",
    "Which columns of Y can rank r compute from what it holds?",
))
def column_forward(ctx):
    for P, N, D_in, D_out in ((2, 3, 4, 6), (4, 2, 5, 8)):
        _, args = probes.column_layer(ctx.rng, P, N, D_in, D_out)
        at = on(P, ("N", N), ("D_in", D_in), ("D_out", D_out))
        got, calls, _ = counted(ctx, COL_FWD, *args, P=P)
        want = ctx.ref.column_parallel_forward(*args)

        def run():
            shards = ranks(got, P, COL_FWD, "y_shards")
            for r in range(P):
                ctx.expect_array(f"y_shards[{r}]", shards[r], want[r], COL_FWD)
            expect_calls(COL_FWD, calls, True, P, DOUBLE)
        annotate(at, run)


def column_backward_call(ctx, P, N, D_in, D_out):
    (x, _, _), (x_ranks, W_shards, b_shards) = probes.column_layer(ctx.rng, P, N, D_in, D_out)
    dy_shards = [upstream(ctx.rng, (N, D_out // P)) for _ in range(P)]
    got, calls, from_sums = counted(ctx, COL_BWD, dy_shards, x_ranks, W_shards, P=P,
                                    sums=lambda v: [(v[0], None)])
    got = ctx.unpack(got, 3, COL_BWD, "dx_ranks, dW_shards, db_shards")
    return (x, x_ranks, W_shards, b_shards, dy_shards), got, calls, from_sums


@QUESTION.check("column_parallel_backward: dx on every rank", points=3, hints=(
    "In the forward, x went to every rank: how many of the ranks' outputs depend on it?",
    "Rank r can compute dy_r @ W_r^T from what it holds. Is that all of dL/dx?",
    "dL/dx = dY @ W^T; write W^T by its blocks of rows, one block per rank.",
))
def column_backward_dx(ctx):
    for P, N, D_in, D_out in ((2, 3, 4, 6), (4, 2, 5, 8)):
        at = on(P, ("N", N), ("D_in", D_in), ("D_out", D_out))
        (x, x_ranks, W_shards, b_shards, dy_shards), got, calls, from_sums = column_backward_call(ctx, P, N, D_in, D_out)
        dout = np.concatenate(dy_shards, axis=1)
        forms = traps.column_dx_forms(dy_shards, W_shards)

        def run():
            dx_ranks = ranks(got[0], P, COL_BWD, "dx_ranks")
            f = lambda z: np.concatenate(ctx.ref.column_parallel_forward([z] * P, W_shards, b_shards), axis=1)  # noqa: E731
            for r in range(P):
                ctx.expect_gradient(f"dx_ranks[{r}]", dx_ranks[r], f, x, dout, COL_BWD,
                                    traps=traps.per_rank(forms, r), counts={"P": P})
            expect_calls(COL_BWD, calls, from_sums, P, DOUBLE)
        annotate(at, run)


@QUESTION.check("column_parallel_backward: each rank's dW and db shard", points=1, hints=(
    "Which rows and columns of Y does rank r's W shard touch?",
    "dW_r has W_r's shape, (D_in, D_out / P); db_r has b_r's.",
))
def column_backward_weights(ctx):
    P, N, D_in, D_out = 3, 4, 3, 6
    (x, x_ranks, W_shards, b_shards, dy_shards), got, _, _ = column_backward_call(ctx, P, N, D_in, D_out)
    dout = np.concatenate(dy_shards, axis=1)

    def run():
        dW, db = ranks(got[1], P, COL_BWD, "dW_shards"), ranks(got[2], P, COL_BWD, "db_shards")
        for r in range(P):
            ctx.expect_gradient(f"dW_shards[{r}]", dW[r], lambda z: np.concatenate(ctx.ref.column_parallel_forward(
                x_ranks, replaced(W_shards, r, z), b_shards), axis=1), W_shards[r], dout, COL_BWD, counts={"P": P})
            ctx.expect_gradient(f"db_shards[{r}]", db[r], lambda z: np.concatenate(ctx.ref.column_parallel_forward(
                x_ranks, W_shards, replaced(b_shards, r, z)), axis=1), b_shards[r], dout, COL_BWD, counts={"P": P})
    annotate(on(P, ("N", N), ("D_in", D_in), ("D_out", D_out)), run)


@QUESTION.check("row_parallel_forward: the output on every rank", points=2, hints=(
    "Rank r holds x's columns and W's rows of one block: what part of x @ W can it compute?",
    "How many ranks hold a copy of b, and how many times does b belong in the output?",
))
def row_forward(ctx):
    for P, N, D_in, D_out in ((2, 3, 6, 4), (4, 2, 8, 5)):
        (_, _, b), args = probes.row_layer(ctx.rng, P, N, D_in, D_out)
        at = on(P, ("N", N), ("D_in", D_in), ("D_out", D_out))
        got, calls, from_sums = counted(ctx, ROW_FWD, *args, P=P, sums=lambda v, b=b: [(v, b)])
        want = ctx.ref.row_parallel_forward(*args)
        forms = traps.row_out_forms(args[0], args[1], b)

        def run():
            out = ranks(got, P, ROW_FWD, "out_ranks")
            for r in range(P):
                ctx.expect_array(f"out_ranks[{r}]", out[r], want[r], ROW_FWD, traps=traps.per_rank(forms, r))
            expect_calls(ROW_FWD, calls, from_sums, P, DOUBLE)
        annotate(at, run)


@QUESTION.check("row_parallel_backward: dx, dW and db on every rank", points=2, hints=(
    "What does every rank already hold of the gradient at Y?",
    "Which of the three gradients can each rank compute from its own shards?",
))
def row_backward(ctx):
    for P, N, D_in, D_out in ((2, 3, 6, 4), (4, 2, 8, 5)):
        (_, _, b), (x_shards, W_shards, b_ranks) = probes.row_layer(ctx.rng, P, N, D_in, D_out)
        dout = upstream(ctx.rng, (N, D_out))
        at = on(P, ("N", N), ("D_in", D_in), ("D_out", D_out))
        got, calls, _ = counted(ctx, ROW_BWD, [dout.copy() for _ in range(P)], x_shards, W_shards, P=P)
        want = ctx.ref.row_parallel_backward([dout] * P, x_shards, W_shards)

        def run():
            value = ctx.unpack(got, 3, ROW_BWD, "dx_shards, dW_shards, db_ranks")
            dx, dW, db = (ranks(v, P, ROW_BWD, n) for v, n in zip(value, ("dx_shards", "dW_shards", "db_ranks")))
            fwd = ctx.ref.row_parallel_forward
            for r in range(P):
                double = lambda i: {"double-all-reduce": traps.times_ranks(want[i][r], P)}  # noqa: E731
                ctx.expect_gradient(f"dx_shards[{r}]", dx[r], lambda z: fwd(replaced(x_shards, r, z), W_shards, b_ranks)[0],
                                    x_shards[r], dout, ROW_BWD, traps=double(0), counts={"P": P})
                ctx.expect_gradient(f"dW_shards[{r}]", dW[r], lambda z: fwd(x_shards, replaced(W_shards, r, z), b_ranks)[0],
                                    W_shards[r], dout, ROW_BWD, traps=double(1), counts={"P": P})
                ctx.expect_gradient(f"db_ranks[{r}]", db[r], lambda z: fwd(x_shards, W_shards, [z] * P)[0],
                                    b, dout, ROW_BWD, traps=double(2), counts={"P": P})
            expect_calls(ROW_BWD, calls, True, P, DOUBLE)
        annotate(at, run)


@QUESTION.check("mlp_forward: the block's output on every rank", points=1, hints=(
    "Which layer's output is a partial sum on each rank, and which is a slice?",
    "Compare with the block on one device: tanh(x @ W1 + b1) @ W2 + b2.",
))
def mlp_forward_values(ctx):
    P, N, D, H = 4, 3, 5, 8
    (_, _, _, _, b2), args = probes.mlp_block(ctx.rng, P, N, D, H)
    got, calls, from_sums = counted(ctx, MLP_FWD, *args, P=P, sums=lambda v: [(v, b2)])
    want = ctx.ref.mlp_forward(*args)

    def run():
        out = ranks(got, P, MLP_FWD, "out_ranks")
        for r in range(P):
            ctx.expect_array(f"out_ranks[{r}]", out[r], want[r], MLP_FWD,
                             traps={"bias-on-every-rank": traps.bias_added_by_every_rank(want[r], b2, P)})
        expect_calls(MLP_FWD, calls, from_sums, P, DOUBLE)
    annotate(on(P, ("N", N), ("D", D), ("H", H)), run)


@QUESTION.check("mlp_backward: every gradient of the block, rank by rank", points=3, hints=(
    "Walk the block backwards: the row-parallel layer, tanh, then the column-parallel layer.",
    "Which gradients are whole on every rank, and which does each rank hold a slice of?",
    "Count the collectives one step of the block needs, forward and backward.",
))
def mlp_backward_values(ctx):
    P, N, D, H = 2, 3, 4, 6
    (x, W1, b1, W2, b2), (x_ranks, W1s, b1s, W2s, b2_ranks) = probes.mlp_block(ctx.rng, P, N, D, H)
    dout = upstream(ctx.rng, (N, D))
    got, calls, from_sums = counted(ctx, MLP_BWD, [dout.copy() for _ in range(P)], x_ranks, W1s, b1s, W2s, P=P,
                                    sums=lambda v: [(v[0], None)])
    want = ctx.ref.mlp_backward([dout] * P, x_ranks, W1s, b1s, W2s)
    fwd = lambda xs=x_ranks, w1=W1s, c1=b1s, w2=W2s, c2=b2_ranks: ctx.ref.mlp_forward(xs, w1, c1, w2, c2)[0]  # noqa: E731
    partial = traps.mlp_dx_terms(dout, x, W1s, b1s, W2s)

    def run():
        value = ctx.unpack(got, 5, MLP_BWD, "dx_ranks, dW1_shards, db1_shards, dW2_shards, db2_ranks")
        names = ("dx_ranks", "dW1_shards", "db1_shards", "dW2_shards", "db2_ranks")
        dx, dW1, db1, dW2, db2 = (ranks(v, P, MLP_BWD, n) for v, n in zip(value, names))
        for r in range(P):
            double = lambda i: {"double-all-reduce": traps.times_ranks(want[i][r], P)}  # noqa: E731
            ctx.expect_gradient(f"dx_ranks[{r}]", dx[r], lambda z: fwd(xs=[z] * P), x, dout, MLP_BWD, counts={"P": P},
                                traps={"dx-not-all-reduced": partial[r], **double(0)})
            ctx.expect_gradient(f"db2_ranks[{r}]", db2[r], lambda z: fwd(c2=[z] * P), b2, dout, MLP_BWD,
                                traps=double(4), counts={"P": P})
            ctx.expect_gradient(f"dW2_shards[{r}]", dW2[r], lambda z: fwd(w2=replaced(W2s, r, z)), W2s[r], dout,
                                MLP_BWD, traps=double(3), counts={"P": P})
            ctx.expect_gradient(f"dW1_shards[{r}]", dW1[r], lambda z: fwd(w1=replaced(W1s, r, z)), W1s[r], dout,
                                MLP_BWD, traps=double(1), counts={"P": P})
            ctx.expect_gradient(f"db1_shards[{r}]", db1[r], lambda z: fwd(c1=replaced(b1s, r, z)), b1s[r], dout,
                                MLP_BWD, traps=double(2), counts={"P": P})
        expect_calls(MLP_BWD, calls, from_sums, P, DOUBLE)
    annotate(on(P, ("N", N), ("D", D), ("H", H)), run)


@QUESTION.check("inputs left unchanged (and the answers right)", points=1, hints=(
    "Does a function change a shard or a copy in place (+=, -=, an in-place tanh)?",
    "Build results in new arrays.",
))
def inputs_unchanged(ctx):
    P = 2
    _, col = probes.column_layer(ctx.rng, P, 2, 3, 4)
    _, row = probes.row_layer(ctx.rng, P, 2, 4, 3)
    _, mlp = probes.mlp_block(ctx.rng, P, 2, 3, 4)
    dy = [upstream(ctx.rng, (2, 2)) for _ in range(P)]
    dout = [upstream(ctx.rng, (2, 3))] * P
    ctx.expect_inputs_unchanged([
        (COL_BWD, (dy, col[0], col[1]), ["dy_shards", "x_ranks", "W_shards"], ctx.ref.column_parallel_backward(dy, col[0], col[1])),
        (ROW_FWD, row, ["x_shards", "W_shards", "b_ranks"], ctx.ref.row_parallel_forward(*row)),
        (MLP_BWD, (dout,) + mlp[:4], ["dout_ranks", "x_ranks", "W1_shards", "b1_shards", "W2_shards"],
         ctx.ref.mlp_backward(dout, *mlp[:4])),
    ])
