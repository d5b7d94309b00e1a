"""Cases for kernels/grad_accumulation.py: two ``Case`` objects, each one micro-batch's whole step: its
forward, the loss's gradient with the WHOLE batch's 1 / N, and its backward added into the
gradient buffers in place (data and buffers in ``dtype``):

- fused: accumulate_params_kernel reduces each weight and bias gradient over the micro-batch's
  rows and adds it straight into its buffer entry;
- unfused: vram_trap's linear_backward_params_kernel writes a scratch gradient, then
  accumulate_kernel adds it into the buffer elementwise.

The batch is K micro-batches of m rows; the buffers start with the share of all but the last
(from the solution notebook), and the timed launch is the last micro-batch, so after one launch
they hold the whole batch's gradient: the solution's ``mlp_grads`` on all N rows. Every timed
launch adds the same share again, which costs the same. TINY makes the last micro-batch shorter
(5 of 8 rows) and uses 32-thread blocks, so a simulated launch stays near 1K threads; LARGE
times a full micro-batch of 65,536 rows of a 64 -> 256 -> 64 MLP (16 MB of fp32 inputs, 64 MB
of hidden activations); HUGE fills an 80 GB GPU with one micro-batch of 25M rows.

Version 2 (kernels/grad_accumulation_v2.py: the tiled kernels of kernels/vram_trap_v2.py) has a
case of its own, fused, with buffers of its own.

PyTorch's counterpart is its own accumulation: leaf tensors whose ``.grad`` starts at the same
buffers, and ``run()`` does the micro-batch's forward and ``loss.backward()``, which adds into
``.grad`` in place. The bytes model counts the micro-batch's x and y, the parameters and the
buffers once each; the activations (h, its mask, out, dout, dh) are scratch that lives on the
device between launches, not counted. The kernels are plain loops, so ``flops`` (two per
multiply-add of the five products) is the figure to read.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, solution

TINY = {"d_in": 4, "hidden": 6, "d_out": 3, "m": 8, "k": 3, "last": 5, "tpb": 32}
LARGE = {"d_in": 64, "hidden": 256, "d_out": 64, "m": 65536, "k": 4, "last": 65536, "tpb": 128}
HUGE = ({"d_in": 64, "hidden": 256, "d_out": 64, "m": 25_000_000, "k": 4, "last": 25_000_000, "tpb": 128},)
NAMES = ("dW1", "db1", "dW2", "db2")


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import grad_accumulation as ga, grad_accumulation_v2 as ga2
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("grad_accumulation")
    s = shape
    d_in, hidden, d_out, m, rows = s["d_in"], s["hidden"], s["d_out"], s["m"], s["last"]
    n = (s["k"] - 1) * m + rows                                        # N rows in the batch
    first = n - rows                                                   # rows already accumulated
    shapes = dict(zip(("W1", "b1", "W2", "b2"), ((d_in, hidden), hidden, (hidden, d_out), d_out)))

    def fill(rng):
        params = tuple(a.astype(dtype) for a in (
            rng.standard_normal((d_in, hidden)) / np.sqrt(d_in), 0.3 * rng.standard_normal(hidden),
            rng.standard_normal((hidden, d_out)) / np.sqrt(hidden), 0.3 * rng.standard_normal(d_out)))
        x = rng.standard_normal((n, d_in)).astype(dtype)                # N, D_in
        y = rng.standard_normal((n, d_out)).astype(dtype)               # N, D_out
        p64 = tuple(p.astype(np.float64) for p in params)
        head = ref.mlp_grads(p64, x[:first].astype(np.float64), y[:first].astype(np.float64))
        start = [(first / n * g).astype(dtype) for g in head]           # their share, n_k / N each
        return {**dict(zip(shapes, params)), **{f"start_{k}": b for k, b in zip(shapes, start)},
                "x": x, "y": y, "x_k": x[first:], "y_k": y[first:]}

    host = arrays.make({**{k: (sh, dtype) for k, sh in shapes.items()},
                        **{f"start_{k}": (sh, dtype) for k, sh in shapes.items()},
                        "x": ((n, d_in), dtype), "y": ((n, d_out), dtype),
                        "x_k": ((rows, d_in), dtype), "y_k": ((rows, d_out), dtype)}, fill)
    params = [getattr(host, k) for k in shapes]
    start = [getattr(host, f"start_{k}") for k in shapes]
    x, y, x_k, y_k = host.x, host.y, host.x_k, host.y_k               # x_k, y_k: the launched micro-batch
    d_params = [cuda.to_device(p) for p in params]
    d_x, d_y = cuda.to_device(x_k), cuda.to_device(y_k)
    ws = ga.workspace(rows, params, dtype)
    inv_n = 1.0 / n

    def expected():
        p64 = tuple(p.astype(np.float64) for p in params)
        return dict(zip(NAMES, ref.mlp_grads(p64, x.astype(np.float64), y.astype(np.float64))))

    def torch_accumulate(device):
        import torch
        x_t, y_t = on_torch(device, x_k, y_k)
        leaves = [t.requires_grad_() for t in on_torch(device, *params)]
        for leaf, buffer in zip(leaves, start):
            leaf.grad = torch.from_numpy(buffer.copy()).to(device)

        def run():
            W1, b1, W2, b2 = leaves
            out = torch.relu(torch.addmm(b1, x_t, W1)) @ W2 + b2
            (0.5 * inv_n * ((out - y_t) ** 2).sum()).backward()      # adds into every .grad
            return dict(zip(NAMES, (leaf.grad for leaf in leaves)))
        return run

    flops = 2 * rows * (2 * d_in * hidden + 3 * hidden * d_out)
    cfg = f"{d_in}->{hidden}->{d_out}, micro-batch of {rows} rows"
    built = []
    for fused, version in ((True, 1), (False, 1), (True, 2)):
        d_buffers = [cuda.to_device(b) for b in start]
        if version == 2:
            launch = lambda bufs=d_buffers: ga2.accumulate_micro_batch_dev(d_params, d_x, d_y, bufs, inv_n, ws)
        else:
            launch = (lambda bufs=d_buffers, f=fused: ga.accumulate_micro_batch_dev(
                d_params, d_x, d_y, bufs, inv_n, ws, f, s["tpb"]))
        how = "v2: tiled 64 x 64, fused" if version == 2 else "fused" if fused else "scratch + add"
        built.append(Case(f"grad accumulation: one micro-batch into the buffers, {how} ({cfg})",
                          {"x": d_x, "y": d_y, **dict(zip(("W1", "b1", "W2", "b2"), d_params))},
                          dict(zip(NAMES, d_buffers)), launch, expected, torch_accumulate, flops))
    return built
