"""Cases for kernels/embedding_backward.py: the lookup (kernel 1), the dense backward by atomic
adds (kernel 2, after a memset of dW) and by sorted segments (kernel 3 writing rows
``unique_ids``, after a memset), and the sparse backward (kernel 3 writing S rows).

Shapes (P, V, D, S): P positions, V rows, D features, S distinct ids; every id appears at least
once and each repeats about P / S times, a tenth of the positions hold padding_idx (id 0, not
among the S). The segments (the sort by id) are made on the host beforehand, as a GPU's radix
sort would make them; their arrays count as read bytes. TINY is 96 positions of 4 features;
LARGE a GPT-2 batch: 32,768 tokens, 50,257 rows of 1,024 features (128 MB of dout, 206 MB of
dW in fp32), 8,192 distinct ids. HUGE fills an 80 GB GPU along each axis: positions (8M tokens:
dout and out 34 GB each), rows (9M rows: W and dW 37 GB each) and features (131,072: 17 GB per
array). PyTorch's counterparts: ``F.embedding``, its backward through autograd (dense), and
with ``sparse=True`` then ``coalesce()``.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, zero_fill, solution

TINY = (96, 40, 4, 12)                  # P, V, D, S
LARGE = (32_768, 50_257, 1024, 8_192)
HUGE = ((8_000_000, 50_257, 1024, 8_192), (32_768, 9_000_000, 1024, 8_192), (32_768, 32_768, 131_072, 8_192))
PAD = 0


def draw_ids(rng, P, V, S):
    """(P,) ids: S distinct ids from [1, V), each at least once, and padding at a tenth of them."""
    pool = rng.choice(np.arange(1, V), size=S, replace=False)
    ids = np.concatenate([pool, rng.choice(pool, size=P - S)])
    ids = rng.permutation(ids)
    ids[rng.choice(P, size=P // 10, replace=False)] = PAD
    return ids.astype(np.int64)


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import embedding_backward as eb
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("embedding_backward")
    P, V, D, S = shape

    def fill(rng):
        ids = draw_ids(rng, P, V, S)
        order, starts, unique_ids = eb.segments(ids, PAD)
        return {"W": rng.standard_normal((V, D)).astype(dtype), "ids": ids, "dout": rng.standard_normal((P, D)).astype(dtype),
                "order": order, "starts": starts, "unique_ids": unique_ids, "rows_of": np.arange(S, dtype=np.int64)}

    kept = P - P // 10
    host = arrays.make({"W": ((V, D), dtype), "ids": (P, np.int64), "dout": ((P, D), dtype), "order": (kept, np.int64),
                        "starts": (S + 1, np.int64), "unique_ids": (S, np.int64), "rows_of": (S, np.int64)}, fill)
    d_W, d_ids, d_dout, d_order, d_starts, d_unique, d_rows_of = (
        cuda.to_device(a) for a in (host.W, host.ids, host.dout, host.order, host.starts, host.unique_ids, host.rows_of))
    d_out, d_dW, d_rows = (cuda.device_array(s, dtype=dtype) for s in ((P, D), (V, D), (S, D)))
    as64 = lambda a: a.astype(np.float64)  # noqa: E731
    ids2 = lambda: host.ids[None, :]  # noqa: E731  (B, T) = (1, P) for the solution's functions
    dout3 = lambda: as64(host.dout)[None]  # noqa: E731

    def atomic():
        zero_fill(d_dW)
        eb.embedding_backward_atomic_device(d_dout, d_ids, PAD, d_dW)

    def sorted_dense():
        zero_fill(d_dW)
        eb.segment_sum_device(d_dout, d_order, d_starts, d_unique, d_dW)

    def torch_ops(device):
        import torch
        import torch.nn.functional as F
        W_t, dout_t, ids_t = on_torch(device, host.W, host.dout, host.ids)

        def backward_t(sparse):
            leaf = W_t.detach().requires_grad_()
            F.embedding(ids_t, leaf, padding_idx=PAD, sparse=sparse).backward(dout_t)
            return leaf.grad.coalesce().values() if sparse else leaf.grad
        keep = (ids_t != PAD)[:, None].to(W_t.dtype)  # padding positions read zeros, as the contract says
        return {"forward": lambda: {"out": F.embedding(ids_t, W_t, padding_idx=PAD) * keep},
                "dense": lambda: {"dW": backward_t(False)}, "sparse": lambda: {"rows": backward_t(True)}}

    where = f"(P={P}, V={V}, D={D}, S={S})"
    return [
        Case(f"embedding forward, a gather {where}", {"W": d_W, "ids": d_ids}, {"out": d_out},
             lambda: eb.embedding_forward_device(d_W, d_ids, PAD, d_out),
             lambda: {"out": ref.embedding_forward(as64(host.W), ids2(), PAD)[0]},
             lambda dev: torch_ops(dev)["forward"], elements=P * D),
        Case(f"embedding backward, dense, atomic adds {where}", {"dout": d_dout, "ids": d_ids}, {"dW": d_dW}, atomic,
             lambda: {"dW": ref.embedding_backward(dout3(), ids2(), V, PAD)},
             lambda dev: torch_ops(dev)["dense"], elements=P * D),
        Case(f"embedding backward, dense, sorted segments {where}",
             {"dout": d_dout, "order": d_order, "starts": d_starts, "unique_ids": d_unique}, {"dW": d_dW}, sorted_dense,
             lambda: {"dW": ref.embedding_backward(dout3(), ids2(), V, PAD)},
             lambda dev: torch_ops(dev)["dense"], elements=P * D),
        Case(f"embedding backward, sparse rows, sorted segments {where}",
             {"dout": d_dout, "order": d_order, "starts": d_starts, "rows_of": d_rows_of}, {"rows": d_rows},
             lambda: eb.segment_sum_device(d_dout, d_order, d_starts, d_rows_of, d_rows),
             lambda: {"rows": ref.embedding_backward_sparse(dout3(), ids2(), V, PAD)[1]},
             lambda dev: torch_ops(dev)["sparse"], elements=P * D),
    ]
