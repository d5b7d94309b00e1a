"""Cases for kernels/ddp_accumulation.py: the ring all-reduce alone, and one whole data-parallel step.

- ring all-reduce: R rank buffers of P values, each launch first restoring them from ``src``
  (a device-to-device copy, counted: the reduce is in place) then 2 (R - 1) ring steps; expected
  is the setup cell's all_reduce from the solution notebook. PyTorch's counterpart on one device:
  the sum over the rows, written back to every row.
- the step: R ranks, shards of ``shard`` rows (the last rank's ``last``), micro-batches of ``m``,
  a linear layer D_in -> D_out: the buffers zeroed, every micro-step (vram_trap's forward, loss
  gradient with the global 1 / N, and accumulating weight gradient), then the ring. Expected is
  the solution's ddp_grads; PyTorch's counterpart is autograd on each rank's micro-batches, adding
  into .grad, then the sum over the ranks.

TINY is 3 ranks (a 301-value buffer for the ring; shards of 10, 10 and 7 rows in micro-batches of
4 for the step) with 32-thread blocks; LARGE a 16M-value buffer on 8 ranks (512 MB in fp32) and
8 shards of 64K rows of 256 features; HUGE a 1.1G-value buffer on 8 ranks (70 GB in fp32, with
its source copy) beside a step of 1M-row shards.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, solution

TINY = {"ranks": 3, "p": 301, "shard": 10, "last": 7, "m": 4, "d_in": 5, "d_out": 3, "tpb": 32}
LARGE = {"ranks": 8, "p": 1 << 24, "shard": 65536, "last": 65536, "m": 16384, "d_in": 256, "d_out": 256,
         "tpb": 128}
HUGE = ({"ranks": 8, "p": 1_100_000_000, "shard": 1_000_000, "last": 1_000_000, "m": 250_000,
         "d_in": 64, "d_out": 64, "tpb": 128},)


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import ddp_accumulation as ddp
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("ddp_accumulation")
    s = shape
    R, P, d_in, d_out, m = s["ranks"], s["p"], s["d_in"], s["d_out"], s["m"]
    sizes = [s["shard"]] * (R - 1) + [s["last"]]
    P_step = d_in * d_out + d_out

    def fill(rng):
        made = {"src": rng.standard_normal((R, P)).astype(dtype),
                "W": (rng.standard_normal((d_in, d_out)) / np.sqrt(d_in)).astype(dtype),
                "b": (0.3 * rng.standard_normal(d_out)).astype(dtype)}
        for r, n in enumerate(sizes):
            made[f"x{r}"] = rng.standard_normal((n, d_in)).astype(dtype)
            made[f"y{r}"] = rng.standard_normal((n, d_out)).astype(dtype)
        return made

    host = arrays.make({"src": ((R, P), dtype), "W": ((d_in, d_out), dtype), "b": (d_out, dtype),
                        **{f"x{r}": ((n, d_in), dtype) for r, n in enumerate(sizes)},
                        **{f"y{r}": ((n, d_out), dtype) for r, n in enumerate(sizes)}}, fill)
    xs, ys = [getattr(host, f"x{r}") for r in range(R)], [getattr(host, f"y{r}") for r in range(R)]
    d_src, d_bufs = cuda.to_device(host.src), cuda.device_array((R, P), dtype)
    d_W, d_b = cuda.to_device(host.W), cuda.to_device(host.b)
    d_xs, d_ys = [cuda.to_device(x) for x in xs], [cuda.to_device(y) for y in ys]
    d_grads = cuda.device_array((R, P_step), dtype)
    d_zeros = cuda.to_device(np.zeros((R, P_step), dtype))
    ws = ddp.workspace(min(m, max(sizes)), d_in, d_out, dtype)
    tpb = s["tpb"]

    def ring():
        d_bufs.copy_to_device(d_src)  # the reduce is in place: every launch starts from the ranks' own
        ddp.ring_all_reduce_device(d_bufs, tpb)

    def step():
        d_grads.copy_to_device(d_zeros)  # zeroed once per step
        ddp.ddp_step_device(d_W, d_b, d_xs, d_ys, d_grads, m, ws)

    def ring_expected():
        return {"bufs": np.stack(ref.all_reduce([row.astype(np.float64) for row in host.src]))}

    def step_expected():
        params = (host.W.astype(np.float64), host.b.astype(np.float64))
        grads = ref.ddp_grads(params, [x.astype(np.float64) for x in xs], [y.astype(np.float64) for y in ys], m)
        return {"grads": np.stack([np.concatenate([dW.ravel(), db]) for dW, db in grads])}

    def torch_ring(device):
        import torch
        (src_t,) = on_torch(device, host.src)
        out = torch.empty_like(src_t)

        def run():
            out.copy_(src_t.sum(dim=0, keepdim=True).expand_as(src_t))
            return {"bufs": out}
        return run

    def torch_step(device):
        import torch
        W_t, b_t = (t.requires_grad_() for t in on_torch(device, host.W, host.b))
        xs_t, ys_t = on_torch(device, *xs), on_torch(device, *ys)
        n_total = sum(sizes)

        def run():
            per_rank = []
            for x_t, y_t in zip(xs_t, ys_t):
                W_t.grad, b_t.grad = None, None
                for a in range(0, x_t.shape[0], m):
                    out = torch.addmm(b_t, x_t[a:a + m], W_t)
                    (0.5 / n_total * ((out - y_t[a:a + m]) ** 2).sum()).backward()
                per_rank.append(torch.cat([W_t.grad.flatten(), b_t.grad]))
            total = torch.stack(per_rank).sum(dim=0, keepdim=True)
            return {"grads": total.expand(R, -1)}
        return run

    rows = sum(sizes)
    return [
        Case(f"ring all-reduce over {R} ranks (P={P}), in place after a copy", {"src": d_src}, {"bufs": d_bufs},
             ring, ring_expected, torch_ring),
        Case(f"data-parallel step: {R} ranks x micro-batches of {m}, then the ring ({d_in}->{d_out}, N={rows})",
             {"W": d_W, "b": d_b, **{f"x{r}": a for r, a in enumerate(d_xs)}, **{f"y{r}": a for r, a in enumerate(d_ys)}},
             {"grads": d_grads}, step, step_expected, torch_step, flops=2 * rows * 2 * d_in * d_out),
    ]
