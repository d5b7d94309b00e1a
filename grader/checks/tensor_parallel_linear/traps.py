"""The wrong variants of tensor_parallel_linear, each computed on a check's own inputs.

Shapes as in the contract (docs/questions/tensor_parallel_linear.md): a value on the ranks is a
list of P arrays, rank r's at index r. Every form is computed here on the whole matrices, the
way one device would, and laid out on the ranks as the answer would hold it.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.question import Trap

COL_FWD, COL_BWD = "column_parallel_forward", "column_parallel_backward"
ROW_FWD, ROW_BWD = "row_parallel_forward", "row_parallel_backward"
MLP_FWD, MLP_BWD = "mlp_forward", "mlp_backward"

TRAPS = [
    Trap("dx-not-all-reduced", "Each rank's gradient at the input is only its own term, "
         "dy_r @ W_r^T: the all-reduce after the column-parallel layer's backward is missing. The "
         "input x fed all P ranks (Megatron's f copies it), and a value used P times gets the sum "
         "of the P gradients: dx = sum over r of dy_r @ W_r^T. Sum the ranks' terms with one "
         "all_reduce, so every rank holds the whole dx.",
         symptom="Each rank's dx is only its own term, dy_r @ W_r^T: the ranks' copies differ, and each "
                 "misses the other ranks' terms.",
         hints=("x went to every rank in the forward: how many gradients does it get back?",
                "f is the identity forward; what is its transpose?")),
    Trap("double-all-reduce", "An all-reduce where the operator is the identity: summing P equal "
         "copies gives P times the value. The gradient entering a row-parallel layer's backward "
         "is already whole on every rank (g's backward is the identity), and so is its bias's "
         "gradient and a dx once reduced; only two collectives are needed per block, one in the "
         "forward (g: the row-parallel layer's partial outputs) and one in the backward (f: the "
         "column-parallel layer's dx).",
         symptom="A value P times too large, or more all-reduce calls than the function needs: an "
                 "all-reduce where the operator is the identity.",
         hints=("Which values does every rank already hold whole?",
                "All-reducing P identical copies multiplies by P.")),
    Trap("bias-on-every-rank", "The row-parallel layer adds its bias on every rank before the "
         "all-reduce, so the sum carries it P times: out = x @ W + P b. The bias belongs to the "
         "whole output, once: add it after the all-reduce (every rank holds the sum by then).",
         symptom="The output carries P times the bias: it was added on every rank before the all-reduce.",
         hints=("What does all_reduce do to something every rank added?",)),
]


def column_dx_forms(dy_shards, W_shards) -> dict:
    """dx_ranks's wrong forms: every rank's own term; the whole dx P times."""
    partial = [dy @ W.T for dy, W in zip(dy_shards, W_shards)]
    P = len(partial)
    return {"dx-not-all-reduced": partial, "double-all-reduce": [P * sum(partial)] * P}


def times_ranks(value, P) -> list:
    """``value`` (one array, or a list of per-rank arrays) P times over: a sum of P equal copies."""
    return [P * np.asarray(v) for v in value] if isinstance(value, list) else P * np.asarray(value)


def row_out_forms(x_shards, W_shards, b) -> dict:
    """out_ranks's wrong form: the bias added on every rank before the sum."""
    P = len(x_shards)
    out = sum(x @ W for x, W in zip(x_shards, W_shards)) + P * b
    return {"bias-on-every-rank": [out] * P}


def mlp_dx_terms(dout, x, W1_shards, b1_shards, W2_shards) -> list:
    """The block's dx as each rank holds it before f's all-reduce: its own term, through its
    hidden columns (dout @ W2_r^T, tanh's derivative, @ W1_r^T)."""
    return [((dout @ W2.T) * (1.0 - np.tanh(x @ W1 + b1) ** 2)) @ W1.T
            for W1, b1, W2 in zip(W1_shards, b1_shards, W2_shards)]


def bias_added_by_every_rank(out, b, P):
    """A right output with the bias P times over instead of once."""
    return out + (P - 1) * b


def per_rank(forms: dict, r: int) -> dict:
    """One rank's array of each per-rank form."""
    return {trap: value[r] for trap, value in forms.items()}
