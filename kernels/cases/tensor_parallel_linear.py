"""Cases for kernels/tensor_parallel_linear.py: one step of Megatron's MLP block on P ranks, as
the launches one rank makes (its shard of each layer's products, tanh and its backward, the
replicated bias's gradient) and the two all-reduces (g's in the forward, then the bias once;
f's of dx in the backward).

The products are naive (a thread per output entry): flops say more than bytes, and their times
compare with PyTorch's cuBLAS products for scale, not parity; the elementwise and reduction
kernels have cases of their own, without flops, so bandwidth judges them. Shape letters: P
ranks, N rows, D the block's width, H its hidden width, Hp = H / P a rank's share. TINY keeps a
simulated launch near 50 threads; LARGE is a rank of a 4-way split of N = 8192 rows, D = 1024,
H = 4096 (32 MB per (N, D) fp32 array). HUGE fills an 80 GB GPU three ways: with rows, with a
rank's hidden share, and with ranks (the all-reduce's (P, N, D) buffer). In float32 the cases
hold 4 (N D (6 + P) + 8 N Hp + 4 D Hp) bytes. Every case's inputs are made on the host
beforehand, so each is one op on arrays that exist. The expected answers are the solution
notebook's functions on one rank (lists of one, zero biases where a case adds none), its
all_reduce, and tanh and its derivative as the notebook writes them; PyTorch's counterparts
are ``x @ W``, ``torch.tanh``, ``sum(0)`` over the ranks, and autograd through ``h @ W2``.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, solution

TINY = (2, 4, 6, 8)                # P, N, D, H
LARGE = (4, 8192, 1024, 4096)
HUGE = ((4, 860_000, 1024, 4096), (4, 8192, 1024, 960_000), (1_600, 8192, 1024, 1_600 * 1024))


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import tensor_parallel_linear as tp
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("tensor_parallel_linear")
    P, N, D, H = shape
    Hp = H // P

    def fill(rng):
        r = lambda *s, scale=1.0: (rng.standard_normal(s) * scale).astype(dtype)  # noqa: E731
        h = np.tanh(rng.standard_normal((N, Hp))).astype(dtype)
        return {"x": r(N, D), "W1": r(D, Hp, scale=1 / np.sqrt(D)), "z": r(N, Hp), "W2": r(Hp, D, scale=1 / np.sqrt(Hp)),
                "b2": r(D), "dout": r(N, D), "partial": r(P, N, D), "h": h, "dh": r(N, Hp), "dz": r(N, Hp)}

    host = arrays.make({"x": ((N, D), dtype), "W1": ((D, Hp), dtype), "z": ((N, Hp), dtype), "W2": ((Hp, D), dtype),
                        "b2": (D, dtype), "dout": ((N, D), dtype), "partial": ((P, N, D), dtype),
                        "h": ((N, Hp), dtype), "dh": ((N, Hp), dtype), "dz": ((N, Hp), dtype)}, fill)
    d = {name: cuda.to_device(getattr(host, name)) for name in ("x", "W1", "z", "W2", "b2", "dout", "partial",
                                                                 "h", "dh", "dz")}
    out = {name: cuda.device_array(s, dtype=dtype) for name, s in (
        ("z", (N, Hp)), ("h", (N, Hp)), ("y", (N, D)), ("out", (N, D)), ("dh", (N, Hp)), ("dW2", (Hp, D)),
        ("db2", (D,)), ("dz", (N, Hp)), ("dx_r", (N, D)), ("dW1", (D, Hp)), ("dx", (N, D)),
        ("scratch", (tp.column_sum_chunks(N), D)))}  # the bias gradient's partial sums
    f64 = lambda name: getattr(host, name).astype(np.float64)  # noqa: E731

    def row_backward():
        tp.matmul_device(d["dout"], False, d["W2"], True, out["dh"])
        tp.matmul_device(d["h"], True, d["dout"], False, out["dW2"])

    def column_backward():
        tp.matmul_device(d["dz"], False, d["W1"], True, out["dx_r"])
        tp.matmul_device(d["x"], True, d["dz"], False, out["dW1"])

    def g_forward():
        tp.all_reduce_device(d["partial"], out["out"])
        tp.add_bias_device(out["out"], d["b2"])

    row_grads = lambda: ref.row_parallel_backward([f64("dout")], [f64("h")], [f64("W2")])  # noqa: E731
    column_grads = lambda: ref.column_parallel_backward([f64("dz")], [f64("x")], [f64("W1")])  # noqa: E731

    def torch_ops(device):
        import torch
        x, W1, z, W2, b2, dout, partial, h, dh, dz = on_torch(device, *(getattr(host, n) for n in (
            "x", "W1", "z", "W2", "b2", "dout", "partial", "h", "dh", "dz")))

        def backward_of(a, W, g):
            a, W = a.detach().clone().requires_grad_(), W.detach().clone().requires_grad_()
            (a @ W).backward(g)
            return a.grad, W.grad

        def row_backward_t():
            dh_t, dW2_t = backward_of(h, W2, dout)
            return {"dh": dh_t, "dW2": dW2_t}

        def column_backward_t():
            dx_t, dW1_t = backward_of(x, W1, dz)
            return {"dx_r": dx_t, "dW1": dW1_t}
        return {"column_forward": lambda: {"z": x @ W1}, "tanh": lambda: {"h": torch.tanh(z)},
                "row_forward": lambda: {"y": h @ W2}, "db2": lambda: {"db2": dout.sum(0)},
                "g": lambda: {"out": partial.sum(0) + b2}, "row_backward": row_backward_t,
                "tanh_backward": lambda: {"dz": dh * (1 - h * h)}, "column_backward": column_backward_t,
                "f": lambda: {"dx": partial.sum(0)}}

    cfg = f"P={P}, N={N}, D={D}, H/P={Hp}"
    product = 2 * N * D * Hp
    return [
        Case(f"column-parallel forward, one rank's product x W1_r ({cfg})", {"x": d["x"], "W1": d["W1"]},
             {"z": out["z"]}, lambda: tp.matmul_device(d["x"], False, d["W1"], False, out["z"]),
             lambda: {"z": ref.column_parallel_forward([f64("x")], [f64("W1")], [np.zeros(Hp)])[0]},
             lambda dev: torch_ops(dev)["column_forward"], product),
        Case(f"tanh on one rank's hidden columns ({cfg})", {"z": d["z"]}, {"h": out["h"]},
             lambda: tp.tanh_device(d["z"], out["h"]), lambda: {"h": np.tanh(f64("z"))},
             lambda dev: torch_ops(dev)["tanh"]),
        Case(f"row-parallel forward, one rank's partial sum h_r W2_r ({cfg})", {"h": d["h"], "W2": d["W2"]},
             {"y": out["y"]}, lambda: tp.matmul_device(d["h"], False, d["W2"], False, out["y"]),
             lambda: {"y": ref.row_parallel_forward([f64("h")], [f64("W2")], [np.zeros(D)])[0]},
             lambda dev: torch_ops(dev)["row_forward"], product),
        Case(f"g: all-reduce of the P partial outputs in rank order, then the bias once ({cfg})",
             {"partial": d["partial"], "b2": d["b2"]}, {"out": out["out"]}, g_forward,
             lambda: {"out": ref.all_reduce(list(f64("partial")))[0] + f64("b2")}, lambda dev: torch_ops(dev)["g"]),
        Case(f"row-parallel backward, one rank's products: dout W2_r^T and h_r^T dout ({cfg})",
             {"dout": d["dout"], "h": d["h"], "W2": d["W2"]}, {"dh": out["dh"], "dW2": out["dW2"]}, row_backward,
             lambda: {"dh": row_grads()[0][0], "dW2": row_grads()[1][0]}, lambda dev: torch_ops(dev)["row_backward"],
             2 * product),
        Case(f"the replicated bias's gradient, db2: dout's column sums ({cfg})", {"dout": d["dout"]},
             {"db2": out["db2"]}, lambda: tp.column_sum_device(d["dout"], out["db2"], out["scratch"]),
             lambda: {"db2": row_grads()[2][0]}, lambda dev: torch_ops(dev)["db2"]),
        Case(f"tanh backward on one rank's hidden columns, from the saved h ({cfg})",
             {"dh": d["dh"], "h": d["h"]}, {"dz": out["dz"]}, lambda: tp.tanh_backward_device(d["dh"], d["h"], out["dz"]),
             lambda: {"dz": f64("dh") * (1.0 - f64("h") ** 2)}, lambda dev: torch_ops(dev)["tanh_backward"]),
        Case(f"column-parallel backward, one rank's products: its dx term dz_r W1_r^T and x^T dz_r ({cfg})",
             {"dz": d["dz"], "x": d["x"], "W1": d["W1"]}, {"dx_r": out["dx_r"], "dW1": out["dW1"]}, column_backward,
             lambda: {"dx_r": column_grads()[0][0], "dW1": column_grads()[1][0]},
             lambda dev: torch_ops(dev)["column_backward"], 2 * product),
        Case(f"f: all-reduce of the P ranks' dx terms in rank order ({cfg})", {"partial": d["partial"]},
             {"dx": out["dx"]}, lambda: tp.all_reduce_device(d["partial"], out["dx"]),
             lambda: {"dx": ref.all_reduce(list(f64("partial")))[0]}, lambda dev: torch_ops(dev)["f"]),
    ]
