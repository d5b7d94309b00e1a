"""The wrong variants of embedding_backward, each computed on a check's own inputs.

Shapes as in the contract: ids int64 (B, T), dout (B, T, D), dW (V, D). Each variant is one
pass over the positions in order: a scatter that adds (right) or assigns (the last or the
first occurrence of an id wins), dropping the padding positions (right) or not.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.question import Trap

FWD, BWD, SPARSE = "embedding_forward", "embedding_backward", "embedding_backward_sparse"

TRAPS = [
    Trap("overwrite-repeats", "A repeated id keeps the gradient of one of its positions and loses "
         "the others: the backward assigns each position's gradient to its row instead of adding "
         "it. A row read at several positions reaches the loss along each of them, so its "
         "gradient is their sum. With numpy's fancy indexing, dW[ids] += dout reads each row once "
         "and writes it back once, so the last write wins; use the unbuffered scatter-add, "
         "np.add.at (torch's index_add_).",
         symptom="Rows whose id appears more than once hold one position's gradient, not the sum "
                 "over every position that read them."),
    Trap("padding-updated", "The padding row gets a gradient. A position holding padding_idx "
         "outputs zeros, a constant that does not depend on W, so no gradient reaches that row: "
         "leave those positions out of the scatter, and leave padding_idx out of the sparse ids.",
         symptom="The row of padding_idx gets the gradient of the positions that hold it; it must "
                 "get none."),
    Trap("dense-gradient", "The sparse backward builds something with a row per vocabulary entry "
         "(a dense V x D gradient, or a length-V count), so its memory grows with the vocabulary, "
         "not with the batch: a table of 2^32 rows cannot be held at all. A batch touches at most "
         "B * T rows; number the distinct ids (np.unique with return_inverse) and sum the "
         "positions' gradients into one row per distinct id.",
         symptom="The sparse backward returns or builds an array sized by the vocabulary V, not by "
                 "the batch."),
]


def scatter(dout, ids, V, padding_idx, assign: str | None = None, drop_padding: bool = True):
    """dW (V, D) of one pass over the positions: ``assign=None`` adds every occurrence (right),
    ``"last"`` or ``"first"`` keeps only that occurrence of each id; ``drop_padding=False``
    lets the padding positions reach their row."""
    D = dout.shape[-1]
    flat_ids, flat = ids.reshape(-1), dout.reshape(-1, D)
    order = range(len(flat_ids)) if assign != "first" else reversed(range(len(flat_ids)))
    dW = np.zeros((V, D))
    for i in order:
        v = int(flat_ids[i])
        if drop_padding and padding_idx is not None and v == padding_idx:
            continue
        dW[v] = flat[i] if assign else dW[v] + flat[i]
    return dW


def overwrite_forms(dout, ids, V, padding_idx, drop_padding: bool = True):
    """dW with one occurrence of each repeated id kept (the last, the first)."""
    return [scatter(dout, ids, V, padding_idx, assign, drop_padding) for assign in ("last", "first")]


def padding_forms(dout, ids, V, padding_idx):
    """dW whose padding row gets the padding positions' gradient: summed, or one of them."""
    return [scatter(dout, ids, V, padding_idx, assign, drop_padding=False) for assign in (None, "last", "first")]


def sparse_rows(dW, unique_ids):
    """A dense form's rows at ``unique_ids``: the sparse answer a variant gives."""
    return dW[unique_ids]
