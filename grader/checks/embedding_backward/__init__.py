"""Hidden checks for embedding_backward: the gradient of a lookup, dense and sparse.

Shapes: W (V, D), ids int64 (B, T), dout and out (B, T, D), dW (V, D); the sparse form
(unique_ids (U,), rows (U, D)). The reference is the solution notebook (``ctx.ref``); the dense
backward is compared with central differences of the reference forward (whose padding positions
output zeros, so the padding row's finite differences are zero), the sparse one with the
reference's and, on a small table, with the same finite differences.

Why the dense trap is graded by the returned form and by a vocabulary too large to hold, not by
a measured peak: ``np.zeros((V, D))`` is zeroed lazily by the kernel, so a meter of resident
memory (the cgroup, the practice meter) sees only the pages the scatter touched, and how many
that is depends on the machine, not on the answer. Measured on the reference machine, a dense
gradient of V = 2^22 rows of D = 16 (512 MiB) scattered from 512 positions, then compacted:
+452 MiB resident with numpy's transparent-huge-page advice (2 MiB pages, THP "madvise"), +3.6
MiB without it (4 KiB pages, or THP "never"); the sparse answer +0.6 MiB. What is truthful everywhere is the answer's own form (a sparse answer with
V rows) and a table of 2^32 rows (``probes.HUGE_V``): any array sized by V, a dense gradient or a
length-V count, fails to allocate there (512 GiB at D = 16, over the sandbox's 4 GiB address
space and any machine's memory), and the answer raises MemoryError (numpy) or a RuntimeError
that says it cannot allocate (torch); that failure, on an answer whose sparse form is otherwise
judged, names ``dense-gradient``.
"""
from __future__ import annotations

import re

import numpy as np

from backprop_traps.grader.checks.embedding_backward import probes, traps
from backprop_traps.grader.checks.embedding_backward.traps import BWD, FWD, SPARSE, TRAPS
from backprop_traps.grader.engine.question import Fail, Question

QUESTION = Question("embedding_backward", "Embedding backward: repeated ids, padding, and a sparse "
                    "gradient", traps=TRAPS, difficulty="medium", kinks={},
                    axes={"dW": ("row v", "feature"), "rows": ("distinct id k", "feature"),
                          "out": ("sequence b", "position t", "feature")})


# -- the forward ------------------------------------------------------------------------------
@QUESTION.check("embedding_forward: rows looked up, with and without padding_idx", points=1, hints=(
    "Which row of W does position (b, t) read?",
    "What does a position holding padding_idx output, whatever W's row holds?",
))
def forward_values(ctx):
    V, D = 9, 3
    W = probes.table(ctx.rng, V, D)
    ids = probes.repeated_ids(ctx.rng, V, 2, 5, 3)
    ctx.expect_array("out", ctx.call(FWD, W, ids, None), ctx.ref.embedding_forward(W, ids, None), FWD)
    pad = int(ids[0, 0])
    ctx.expect_array("out", ctx.call(FWD, W, ids, pad), ctx.ref.embedding_forward(W, ids, pad), FWD)


# -- the dense backward -------------------------------------------------------------------------
def expect_dense(ctx, dout, ids, V, pad, W, wrong=None):
    dW = ctx.call(BWD, dout, ids, V, pad)
    ctx.expect_gradient("dW", dW, lambda w: ctx.ref.embedding_forward(w, ids, pad), W, dout, BWD,
                        traps=wrong, reference=ctx.ref.embedding_backward(dout, ids, V, pad))


@QUESTION.check("embedding_backward: dW against finite differences (distinct ids)", points=1, hints=(
    "Write the lookup as a one-hot matrix times W, and use the matmul rule.",
    "Which rows does the batch not read, and what is their gradient?",
))
def distinct(ctx):
    V, D = 30, 4
    W, ids = probes.table(ctx.rng, V, D), probes.distinct_ids(ctx.rng, V, 2, 4)
    expect_dense(ctx, probes.upstream_like(ctx.rng, ids, D), ids, V, None, W)


@QUESTION.check("embedding_backward: dW against finite differences (ids repeated in the batch)",
                points=3, hints=(
    "Token 7 at positions 2 and 5: along how many paths does row 7 reach the loss?",
    "The chain rule adds the paths: row v's gradient is the sum of dout over every position "
    "holding v.",
    "Does your scatter keep every occurrence of a repeated index? Try it on ids = [1, 1].",
))
def repeats(ctx):
    for V, D, B, T, distinct_count in ((10, 3, 3, 7, 4), (6, 2, 2, 9, 2)):
        W = probes.table(ctx.rng, V, D)
        ids = probes.repeated_ids(ctx.rng, V, B, T, distinct_count)
        dout = probes.upstream_like(ctx.rng, ids, D)
        expect_dense(ctx, dout, ids, V, None, W,
                     wrong={"overwrite-repeats": traps.overwrite_forms(dout, ids, V, None)})


@QUESTION.check("embedding_backward: dW against finite differences (a padding_idx)", points=2, hints=(
    "What does a position holding padding_idx output, and does that depend on W?",
    "A constant output sends no gradient back: which positions take part in the scatter?",
))
def padding(ctx):
    for V, D, pad in ((25, 3, None), (12, 2, 0)):
        pad = int(ctx.rng.integers(1, V)) if pad is None else pad
        W = probes.table(ctx.rng, V, D)
        ids = probes.padded_ids(ctx.rng, V, 3, 6 if V > 20 else 3, pad)
        dout = probes.upstream_like(ctx.rng, ids, D)
        expect_dense(ctx, dout, ids, V, pad, W, wrong={"padding-updated": traps.padding_forms(dout, ids, V, pad)})


# -- the sparse backward ------------------------------------------------------------------------
def compact_forms(dout, ids, pad, want_ids, forms):
    """The trap forms' rows at ``want_ids``, computed on ids renumbered 0..U-1 (nothing of V's
    size: V may be 2^32). ``forms(dout, ids, U, pad)`` gives dense forms on the renumbered ids."""
    uniq, inverse = np.unique(ids, return_inverse=True)
    small = inverse.reshape(ids.shape).astype(np.int64)
    small_pad = None if pad is None or pad not in uniq else int(np.searchsorted(uniq, pad))
    keep = np.searchsorted(uniq, want_ids)
    return [f[keep] for f in forms(dout, small, len(uniq), small_pad)]


def expect_sparse(ctx, got, dout, ids, V, pad, where):
    unique_ids, rows = ctx.unpack(got, 2, SPARSE, "unique_ids, rows")
    want_ids, want_rows = ctx.ref.embedding_backward_sparse(dout, ids, V, pad)
    for name, value in (("unique_ids", unique_ids), ("rows", rows)):
        if isinstance(value, np.ndarray) and value.ndim >= 1 and value.shape[0] == V != len(want_ids):
            raise Fail(f"{where}: `{name}` has {V} entries, one per row of the table; the batch "
                       f"touches {len(want_ids)} distinct ids. {QUESTION.trap('dense-gradient').explanation}",
                       "dense-gradient")
    if (pad is not None and isinstance(unique_ids, np.ndarray) and isinstance(rows, np.ndarray)
            and unique_ids.shape == (len(want_ids) + 1,) and rows.shape == (len(want_ids) + 1, dout.shape[-1])
            and np.array_equal(np.sort(unique_ids), np.union1d(want_ids, [pad]))):
        at = int(np.flatnonzero(unique_ids == pad)[0])
        if np.any(rows[at] != 0):
            raise Fail(f"{where}: `unique_ids` lists padding_idx = {pad}, with a nonzero row. "
                       f"{QUESTION.trap('padding-updated').explanation}", "padding-updated")
        raise Fail(f"{where}: `unique_ids` lists padding_idx = {pad} (with a zero row); the sparse ids "
                   "are the distinct ids other than padding_idx.")
    ctx.expect_array("unique_ids", unique_ids, want_ids, SPARSE, integer=True)
    wrong = {"overwrite-repeats": compact_forms(dout, ids, pad, want_ids, traps.overwrite_forms)}
    ctx.expect_array("rows", rows, want_rows, SPARSE, traps=wrong)
    return want_ids, np.asarray(rows)


@QUESTION.check("embedding_backward_sparse: ids and rows on a 5,000-row table (ids repeated, "
                "a padding_idx)", points=3, hints=(
    "How many rows of the table can a batch of B * T positions touch?",
    "Number the distinct ids that appear (other than padding_idx), then add each position's "
    "gradient into its id's row.",
    "Is anything you build as long as the vocabulary?",
))
def sparse(ctx):
    V, D, pad = 5000, 3, int(ctx.rng.integers(0, 5000))
    ids = probes.repeated_ids(ctx.rng, V, 4, 12, 9)
    ids[ids == pad] = (pad + 1) % V  # only the padded tails hold padding_idx
    ids[:, -2:] = pad
    dout = probes.upstream_like(ctx.rng, ids, D)
    where = f"On a table of V = {V} rows, ids (4, 12) with repeats, padding_idx = {pad}"
    got = ctx.call(SPARSE, dout, ids, V, pad)
    unique_ids, rows = expect_sparse(ctx, got, dout, ids, V, pad, where)
    # the same against finite differences, on a small table whose rows are the touched ones
    small_V = len(unique_ids) + 1
    small_ids = np.where(ids == pad, small_V - 1, np.searchsorted(unique_ids, ids))
    W = probes.table(ctx.rng, small_V, D)
    dense = np.zeros((small_V, D))
    dense[:-1] = rows
    ctx.expect_gradient("rows, as a dense dW", dense, lambda w: ctx.ref.embedding_forward(w, small_ids, small_V - 1),
                        W, dout, SPARSE)


def allocation_failure(feedback: str) -> bool:
    """The learner's call failed allocating memory: numpy's MemoryError, or torch's RuntimeError
    that says it cannot allocate (read from the exception's message, never from the quoted line
    of code, which the feedback puts in backquotes)."""
    return "raised MemoryError" in feedback or re.search(r"raised RuntimeError: [^`]*allocat", feedback) is not None


@QUESTION.check(f"embedding_backward_sparse on a table of 2^32 rows", points=2, hints=(
    "What is the size of everything your sparse backward allocates, in terms of V?",
    "A batch touches at most B * T rows: number the distinct ids that appear and work with those.",
))
def huge_table(ctx):
    ids = probes.huge_ids(ctx.rng, 8, 32, 60)
    dout = probes.upstream_like(ctx.rng, ids, probes.HUGE_D)
    where = f"On a table of V = 2^32 rows, ids (8, 32) with repeats, D = {probes.HUGE_D}"
    try:
        got = ctx.call(SPARSE, dout, ids, probes.HUGE_V, None)
    except Fail as fail:
        if allocation_failure(fail.feedback):
            raise Fail(f"{where}: {fail.feedback}. {QUESTION.trap('dense-gradient').explanation}",
                       "dense-gradient") from None
        raise
    expect_sparse(ctx, got, dout, ids, probes.HUGE_V, None, where)


@QUESTION.check("inputs left unchanged (and the answers right)", points=1, hints=(
    "Does any function write into its arguments (padding positions set to zero in dout, say)?",
))
def inputs_unchanged(ctx):
    V, D, pad = 11, 3, 2
    W = probes.table(ctx.rng, V, D)
    ids = probes.repeated_ids(ctx.rng, V, 2, 6, 3)
    ids[:, -1] = pad
    dout = probes.upstream_like(ctx.rng, ids, D)
    want_ids, want_rows = ctx.ref.embedding_backward_sparse(dout, ids, V, pad)

    def sparse_right(got):
        return (isinstance(got, (tuple, list)) and len(got) == 2 and np.array_equal(np.asarray(got[0]), want_ids)
                and np.shape(got[1]) == want_rows.shape and np.allclose(np.asarray(got[1], dtype=float), want_rows))
    ctx.expect_inputs_unchanged([
        (FWD, (W, ids, pad), ["W", "ids"], ctx.ref.embedding_forward(W, ids, pad)),
        (BWD, (dout, ids, V, pad), ["dout", "ids"], ctx.ref.embedding_backward(dout, ids, V, pad)),
        (SPARSE, (dout, ids, V, pad), ["dout", "ids"], sparse_right),
    ])
