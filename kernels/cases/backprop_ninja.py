"""Cases for kernels/backprop_ninja.py: every one of its twelve kernels, each as one case.

At TINY the inputs come from a whole step of the solution notebook (a model with repeated
ids), so every expected value is the solution's own intermediate or gradient. At LARGE and
HUGE the inputs are random, and only the launch is timed (or dry-run):
  LARGE  2^12 examples of 2^6 tokens, 256 channels, a 50,304-token vocabulary, 2^14 hidden
         units: 256 MB per (B, H) array and 824 MB of logits in fp32;
  HUGE   the batch grown until every case's arrays together fill an 80 GB GPU.
Two kernels get smaller problems than the rest, so that a GPU run stays short: the naive
matrix product (one thread per output, K multiply-adds each) is the second linear layer,
(B, H) @ (H, C); the deterministic embedding gather (V * C threads, each walking every
position) sees POSITIONS_FOR_GATHER positions.

PyTorch's counterparts are its own ops: ``embedding`` and ``index_add``, ``addmm``,
``native_layer_norm`` and its backward, ``tanh`` and a multiply by the unpacked mask,
``cross_entropy`` (per row) and its softmax gradient, ``sum``. Shape letters as in the
kernel module: B, T, V, C, H.
"""
from __future__ import annotations

import math

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, solution

TINY = (3, 4, 7, 5, 6)                    # B, T, V, C, H
LARGE = (2 ** 12, 2 ** 6, 50304, 256, 2 ** 14)
HUGE = ((2 ** 12 * 13, 2 ** 6, 50304, 256, 2 ** 14),)
P_DROP, EPS = 0.25, 1e-5
POSITIONS_FOR_GATHER = 1024


def random_problem(rng, B, T, V, C, H, p_drop=0.25):
    """A model and a batch with repeated ids, for validation and timing."""
    params = {"E": rng.normal(size=(V, C)), "W1": rng.normal(size=(T * C, H)) / math.sqrt(T * C),
              "b1": rng.normal(size=H), "gamma": rng.normal(size=H), "beta": rng.normal(size=H),
              "W2": rng.normal(size=(H, C)) / math.sqrt(H), "b2": rng.normal(size=C)}
    idx = rng.integers(0, max(1, V // 2), size=(B, T))  # half the vocabulary: ids repeat
    targets = rng.integers(0, V, size=B)
    keep_bits = np.packbits(rng.random(B * H) >= p_drop)
    return params, idx, targets, keep_bits, p_drop


def _inputs(shape, dtype, arrays, ref):
    """The host arrays every case reads, by name: a solution step's at TINY, random otherwise."""
    B, T, V, C, H = shape
    gather_b = B if shape == TINY else max(1, POSITIONS_FOR_GATHER // T)
    spec = {"idx": ((B, T), np.int64), "E": ((V, C), dtype), "targets": (B, np.int64),
            "keep_bits": (-(-B * H // 8), np.uint8), "hpre": ((B, H), dtype), "gamma": (H, dtype),
            "beta": (H, dtype), "xhat": ((B, H), dtype), "rstd": (B, dtype), "hln": ((B, H), dtype),
            "h": ((B, H), dtype), "hdrop": ((B, H), dtype), "W2": ((H, C), dtype), "b2": (C, dtype),
            "logits": ((B, V), dtype), "row_max": (B, dtype), "row_sum": (B, dtype), "dz": ((B, C), dtype), "dhdrop": ((B, H), dtype),
            "dhln": ((B, H), dtype), "demb": ((B, T, C), dtype), "dE_output": ((V, C), dtype),
            "gather_idx": ((gather_b, T), np.int64), "gather_demb": ((gather_b, T, C), dtype)}

    def from_the_solution(rng):
        params, idx, targets, keep_bits, _ = random_problem(rng, B, T, V, C, H, P_DROP)
        _, cache = ref.ninja_forward(params, idx, targets, keep_bits, P_DROP, EPS)
        grads = ref.ninja_backward(params, cache, idx, targets, keep_bits, P_DROP)
        made = {"idx": idx, "E": params["E"], "targets": targets, "keep_bits": keep_bits,
                "hpre": cache["hpre"], "gamma": params["gamma"], "beta": params["beta"],
                "xhat": cache["xhat"], "rstd": cache["rstd"], "hln": cache["hln"], "h": cache["h"],
                "hdrop": cache["hdrop"], "W2": params["W2"], "b2": params["b2"], "logits": cache["logits"],
                "dz": grads["dz"], "dhdrop": grads["dhdrop"], "dhln": grads["dhln"], "demb": grads["demb"],
                "dE_output": grads["dlogits"].T @ cache["z"], "gather_idx": idx, "gather_demb": grads["demb"]}
        row_statistics(made)
        made = {k: np.ascontiguousarray(v).astype(spec[k][1], copy=False) for k, v in made.items()}
        return made, cache, grads

    def row_statistics(made):  # what kernel 5 leaves for kernel 6
        logits = made["logits"].astype(np.float64)
        m = logits.max(1)
        made["row_max"], made["row_sum"] = m, np.exp(logits - m[:, None]).sum(1)

    def random(rng):  # random where the step is free, derived where one array follows from others
        made = {name: rng.standard_normal(shp, dtype=dt) for name, (shp, dt) in spec.items()
                if dt == np.dtype(dtype)}  # drawn in dtype: no float64 copies
        made["idx"], made["gather_idx"] = rng.integers(0, V, size=(B, T)), rng.integers(0, V, size=spec["gather_idx"][0])
        made["targets"] = rng.integers(0, V, size=B)
        made["keep_bits"] = np.packbits(rng.random(B * H) >= P_DROP)
        hpre = made["hpre"].astype(np.float64)
        mean = hpre.mean(1, keepdims=True)
        rstd = 1.0 / np.sqrt(((hpre - mean) ** 2).mean(1, keepdims=True) + EPS)
        made["xhat"] = (hpre - mean) * rstd
        made["rstd"] = rstd[:, 0]
        made["hln"] = made["gamma"] * made["xhat"] + made["beta"]
        made["h"] = np.tanh(made["hln"])
        keep = np.unpackbits(made["keep_bits"], count=B * H).reshape(B, H)
        made["hdrop"] = made["h"] * keep / (1.0 - P_DROP)
        row_statistics(made)
        return {k: np.asarray(v).astype(spec[k][1], copy=False) for k, v in made.items()}

    solution = {}

    def fill(rng):
        if shape != TINY:
            return random(rng)
        made, solution["cache"], solution["grads"] = from_the_solution(rng)
        return made

    return arrays.make(spec, fill), solution


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import backprop_ninja as bn
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("backprop_ninja")
    B, T, V, C, H = shape
    host, step = _inputs(shape, dtype, arrays, ref)   # step: the solution step's cache and grads
    cache = lambda key: step["cache"][key]
    grad = lambda key: step["grads"][key]
    d = {name: cuda.to_device(getattr(host, name)) for name in vars(host)}
    out = lambda shp: cuda.device_array(shp, dtype=dtype)
    emb, z = out((B, T, C)), out((B, C))
    mean, rstd, xhat, hln = out(B), out(B), out((B, H)), out((B, H))
    h_out, hdrop = out((B, H)), out((B, H))
    row_max, row_sum, losses, dlogits = out(B), out(B), out(B), out((B, V))
    db2, dh, dhln_out, dhpre, dgamma, dbeta = out(C), out((B, H)), out((B, H)), out((B, H)), out(H), out(H)
    dE, dE_gather = (cuda.to_device(host.dE_output) for _ in range(2))
    scale = 1.0 / (1.0 - P_DROP)

    def keep_float():
        return np.unpackbits(host.keep_bits, count=B * H).reshape(B, H).astype(dtype)

    def torch_ops(device):
        import torch
        import torch.nn.functional as F
        t = dict(zip(vars(host), on_torch(device, *vars(host).values())))
        keep = on_torch(device, keep_float())[0]

        def layernorm_backward():
            hpre_t = t["hpre"]
            mean_t = hpre_t.mean(1, keepdim=True)
            dx, dg, db = torch.ops.aten.native_layer_norm_backward(
                t["dhln"], hpre_t, [H], mean_t, t["rstd"][:, None], t["gamma"], t["beta"], [True, True, True])
            return {"dhpre": dx, "dgamma": dg, "dbeta": db}

        def cross_entropy():
            logits_t = t["logits"]
            return {"losses": F.cross_entropy(logits_t, t["targets"], reduction="none"),
                    "row_max": logits_t.max(1).values}

        def cross_entropy_backward():
            p = torch.softmax(t["logits"], 1)
            p[torch.arange(B, device=device), t["targets"]] -= 1
            return {"dlogits": p / B}

        def layernorm_forward():
            y, m, r = torch.ops.aten.native_layer_norm(t["hpre"], [H], t["gamma"], t["beta"], EPS)
            return {"hln": y, "mean": m.reshape(-1), "rstd": r.reshape(-1)}

        return {
            "embedding": lambda: {"emb": F.embedding(t["idx"], t["E"])},
            "matmul": lambda: {"z": torch.addmm(t["b2"], t["hdrop"], t["W2"])},
            "layernorm": layernorm_forward,
            "tanh_dropout": lambda: {"h": torch.tanh(t["hln"]), "hdrop": torch.tanh(t["hln"]) * keep * scale},
            "cross_entropy": cross_entropy, "cross_entropy_backward": cross_entropy_backward,
            "column_sum": lambda: {"db2": t["dz"].sum(0)},
            "dropout_tanh": lambda: {"dh": t["dhdrop"] * keep * scale,
                                     "dhln": t["dhdrop"] * keep * scale * (1 - t["h"] * t["h"])},
            "layernorm_backward": layernorm_backward,
            "scatter": lambda: {"dE": t["dE_output"].index_add(0, t["idx"].reshape(-1), t["demb"].reshape(-1, C))},
            "gather": lambda: {"dE": t["dE_output"].index_add(0, t["gather_idx"].reshape(-1),
                                                              t["gather_demb"].reshape(-1, C))},
        }

    def expected_cross_entropy():
        logits = host.logits.astype(np.float64)
        m = logits.max(1)
        s = np.exp(logits - m[:, None]).sum(1)
        return {"row_max": m, "row_sum": s, "losses": np.log(s) + m - logits[np.arange(B), host.targets]}

    torch_op = lambda key: (lambda dev: torch_ops(dev)[key])
    gather_positions = host.gather_idx.shape[0] * T
    return [
        Case(f"ninja: embedding forward, a gather (V={V}, C={C})", {"idx": d["idx"], "E": d["E"]},
             {"emb": emb}, lambda: bn.embedding_forward_device(d["idx"], d["E"], emb),
             lambda: {"emb": cache("emb")}, torch_op("embedding")),
        Case(f"ninja: matmul + bias, one thread per output ({H}->{C})",
             {"hdrop": d["hdrop"], "W2": d["W2"], "b2": d["b2"]}, {"z": z},
             lambda: bn.matmul_device(d["hdrop"], d["W2"], d["b2"], z),
             lambda: {"z": cache("z")}, torch_op("matmul"), 2 * B * H * C),
        Case(f"ninja: layernorm forward, one thread per row (H={H})",
             {"hpre": d["hpre"], "gamma": d["gamma"], "beta": d["beta"]},
             {"mean": mean, "rstd": rstd, "xhat": xhat, "hln": hln},
             lambda: bn.layernorm_forward_device(d["hpre"], d["gamma"], d["beta"], EPS, mean, rstd, xhat, hln),
             lambda: {k: cache(k) for k in ("mean", "rstd", "xhat", "hln")}, torch_op("layernorm")),
        Case(f"ninja: tanh + inverted dropout forward, mask as bits (H={H})",
             {"hln": d["hln"], "keep_bits": d["keep_bits"]}, {"h": h_out, "hdrop": hdrop},
             lambda: bn.tanh_dropout_forward_device(d["hln"], d["keep_bits"], scale, h_out, hdrop),
             lambda: {"h": cache("h"), "hdrop": cache("hdrop")}, torch_op("tanh_dropout")),
        Case(f"ninja: cross-entropy forward, one thread per row (V={V})",
             {"logits": d["logits"], "targets": d["targets"]},
             {"row_max": row_max, "row_sum": row_sum, "losses": losses},
             lambda: bn.cross_entropy_forward_device(d["logits"], d["targets"], row_max, row_sum, losses),
             expected_cross_entropy, torch_op("cross_entropy")),
        Case(f"ninja: cross-entropy backward, one thread per logit (V={V})",
             {"logits": d["logits"], "targets": d["targets"], "row_max": d["row_max"], "row_sum": d["row_sum"]},
             {"dlogits": dlogits},
             lambda: bn.cross_entropy_backward_device(d["logits"], d["targets"], d["row_max"], d["row_sum"], dlogits),
             lambda: {"dlogits": grad("dlogits")}, torch_op("cross_entropy_backward")),
        Case(f"ninja: bias gradient, a column sum in a fixed order (C={C})", {"dz": d["dz"]}, {"db2": db2},
             lambda: bn.column_sum_device(d["dz"], db2),
             lambda: {"db2": grad("db2")}, torch_op("column_sum")),
        Case(f"ninja: dropout + tanh backward, mask as bits (H={H})",
             {"dhdrop": d["dhdrop"], "keep_bits": d["keep_bits"], "h": d["h"]}, {"dh": dh, "dhln": dhln_out},
             lambda: bn.dropout_tanh_backward_device(d["dhdrop"], d["keep_bits"], scale, d["h"], dh, dhln_out),
             lambda: {"dh": grad("dh"), "dhln": grad("dhln")}, torch_op("dropout_tanh")),
        Case(f"ninja: layernorm backward, rows then units (H={H})",
             {"dhln": d["dhln"], "gamma": d["gamma"], "xhat": d["xhat"], "rstd": d["rstd"]},
             {"dhpre": dhpre, "dgamma": dgamma, "dbeta": dbeta},
             lambda: bn.layernorm_backward_device(d["dhln"], d["gamma"], d["xhat"], d["rstd"], dhpre, dgamma, dbeta),
             lambda: {k: grad(k) for k in ("dhpre", "dgamma", "dbeta")}, torch_op("layernorm_backward")),
        Case(f"ninja: embedding backward, atomic scatter-add into the tied dE (V={V}, C={C})",
             {"idx": d["idx"], "demb": d["demb"]}, {"dE": dE},
             lambda: bn.embedding_backward_device(d["idx"], d["demb"], dE),
             lambda: {"dE": grad("dE")}, torch_op("scatter")),
        Case(f"ninja: embedding backward, deterministic gather ({gather_positions} positions, V={V})",
             {"idx": d["gather_idx"], "demb": d["gather_demb"]}, {"dE": dE_gather},
             lambda: bn.embedding_backward_device(d["gather_idx"], d["gather_demb"], dE_gather, deterministic=True),
             lambda: {"dE": grad("dE")}, torch_op("gather")),
    ]
