"""The benchmark's cases: every kernel launch on arrays made beforehand, with its references.

One builder per kernel module. Each Case holds the device arrays an op reads and writes
(the bytes model counts each once), the launch itself (what benchmarks/kernels_gpu.py
times, with no allocation or host copy inside), the solution notebook's answer for the
tiny correctness pass, and PyTorch's own op for the same job (built on any torch device,
so it is also checked on the CPU by tests/kernels/test_bench_smoke.py).
numba.cuda is imported inside the builders: the caller picks the simulator or the GPU
first. Shape letters as in each kernel module.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Sizes:
    pool: tuple    # N, C, H, W, k, s
    conv: tuple    # N, C_in, C_out, L, K, stride, padding
    ce: tuple      # N rows, K classes
    linear: tuple  # N, D_in, D_out


# TINY keeps each simulated launch near 1K threads. LARGE moves > 100 MB per op in fp32, so
# each launch runs long enough (> 0.1 ms on any GPU) to hide the host's launch cost.
TINY = Sizes(pool=(2, 3, 9, 8, 3, 2), conv=(2, 2, 2, 10, 3, 2, 1), ce=(2, 37), linear=(5, 4, 6))
LARGE = Sizes(pool=(64, 64, 128, 128, 3, 2), conv=(32, 32, 32, 32768, 3, 1, 1),
              ce=(4096, 16384), linear=(524288, 64, 64))


@dataclass
class Case:
    """One op: a kernel launch (or the launches that make it) on arrays made beforehand."""
    name: str
    reads: dict                  # name -> device array the op reads (counted once each)
    writes: dict                 # name -> device array the op writes (counted once each)
    launch: Callable[[], None]   # the launches and nothing else: what gets timed
    expected: Callable[[], dict]  # name -> numpy result from the solution notebooks
    torch_op: Callable           # torch_op(device) -> run; run() -> name -> tensor
    flops: int = 0               # multiply-adds * 2, for the compute-heavy naive kernels

    def moved_bytes(self) -> int:
        return sum(a.nbytes for a in self.reads.values()) + sum(a.nbytes for a in self.writes.values())

    def buffer_bytes(self) -> int:
        """What the op allocates beyond its inputs: outputs that do not overwrite an input."""
        return sum(a.nbytes for a in self.writes.values()
                   if all(a is not r for r in self.reads.values()))


def blocks(total, threads, cap=None):
    n = max(1, math.ceil(total / threads))
    return min(n, cap) if cap else n


def on_torch(device, *arrays):
    import torch
    return [torch.from_numpy(np.ascontiguousarray(a)).to(device) for a in arrays]


# ---------------------------------------------------------------- the cases, one builder per module

def pool_cases(sizes, dtype, rng):
    from numba import cuda
    from numba.cuda.cudadrv.driver import device_memset
    from backprop_traps.grader.loading.reference import load_solution
    from backprop_traps.kernels import routing_trap as rt
    ref = load_solution("routing_trap")
    N, C, H, W, k, s = sizes.pool
    x = rng.standard_normal((N, C, H, W)).astype(dtype)        # N, C, H, W
    _, argmax = ref.maxpool2d_forward(x, k, s)                 # N, C, Ho, Wo
    dout = rng.standard_normal(argmax.shape).astype(dtype)     # N, C, Ho, Wo
    d_x, d_argmax, d_dout = (cuda.to_device(a) for a in (x, argmax, dout))
    out_inf, out, am, out_avg = (cuda.device_array(argmax.shape, dtype=t)
                                 for t in (dtype, dtype, np.int64, dtype))
    dx, dx_atomic, dx_avg = (cuda.device_array(x.shape, dtype=dtype) for _ in range(3))
    zero, inv_area = dtype.type(0), dtype.type(1.0 / (k * k))
    per_out = (blocks(argmax.size, rt.THREADS_PER_BLOCK), rt.THREADS_PER_BLOCK)
    per_in = (blocks(x.size, rt.THREADS_PER_BLOCK), rt.THREADS_PER_BLOCK)

    def atomic():
        device_memset(dx_atomic, 0, dx_atomic.nbytes)  # the scatter needs dx zeroed: part of the op
        rt.maxpool2d_backward_atomic_kernel[per_out](d_dout, d_argmax, dx_atomic)

    def torch_pool(device):
        import torch
        import torch.nn.functional as F
        x_t, dout_t = on_torch(device, x, dout)
        _, idx_t = F.max_pool2d(x_t, k, s, return_indices=True)
        max_bwd = lambda: {"dx": torch.ops.aten.max_pool2d_with_indices_backward(
            dout_t, x_t, [k, k], [s, s], [0, 0], [1, 1], False, idx_t)}
        return {
            "forward": lambda: dict(zip(("out", "argmax"), F.max_pool2d(x_t, k, s, return_indices=True))),
            "inference": lambda: {"out": F.max_pool2d(x_t, k, s)},
            "gather": max_bwd, "atomic": max_bwd,
            "avg_forward": lambda: {"out": F.avg_pool2d(x_t, k, s)},
            "avg_backward": lambda: {"dx": torch.ops.aten.avg_pool2d_backward(
                dout_t, x_t, [k, k], [s, s], [0, 0], False, True, None)},
        }

    cfg = f"k{k} s{s}"
    return [
        Case(f"max-pool forward + argmax ({cfg})", {"x": d_x}, {"out": out, "argmax": am},
             lambda: rt.maxpool2d_forward_kernel[per_out](d_x, out, am, k, s),
             lambda: dict(zip(("out", "argmax"), ref.maxpool2d_forward(x, k, s))),
             lambda dev: torch_pool(dev)["forward"]),
        Case(f"max-pool forward, inference only ({cfg})", {"x": d_x}, {"out": out_inf},
             lambda: rt.maxpool2d_forward_inference_kernel[per_out](d_x, out_inf, k, s),
             lambda: {"out": ref.maxpool2d_forward(x, k, s)[0]},
             lambda dev: torch_pool(dev)["inference"]),
        Case(f"max-pool backward, gather ({cfg})", {"dout": d_dout, "argmax": d_argmax}, {"dx": dx},
             lambda: rt.maxpool2d_backward_kernel[per_in](d_dout, d_argmax, dx, k, s, zero),
             lambda: {"dx": ref.maxpool2d_backward(dout, argmax, x.shape, k, s)},
             lambda dev: torch_pool(dev)["gather"]),
        Case(f"max-pool backward, atomic scatter ({cfg})", {"dout": d_dout, "argmax": d_argmax},
             {"dx": dx_atomic}, atomic,
             lambda: {"dx": ref.maxpool2d_backward(dout, argmax, x.shape, k, s)},
             lambda dev: torch_pool(dev)["atomic"]),
        Case(f"avg-pool forward ({cfg})", {"x": d_x}, {"out": out_avg},
             lambda: rt.avgpool2d_forward_kernel[per_out](d_x, out_avg, k, s, inv_area, zero),
             lambda: {"out": ref.avgpool2d_forward(x, k, s)},
             lambda dev: torch_pool(dev)["avg_forward"]),
        Case(f"avg-pool backward ({cfg})", {"dout": d_dout}, {"dx": dx_avg},
             lambda: rt.avgpool2d_backward_kernel[per_in](d_dout, dx_avg, k, s, inv_area, zero),
             lambda: {"dx": ref.avgpool2d_backward(dout, x.shape, k, s)},
             lambda dev: torch_pool(dev)["avg_backward"]),
    ]


def conv_cases(sizes, dtype, rng):
    from numba import cuda
    from backprop_traps.grader.loading.reference import load_solution
    from backprop_traps.kernels import per_step_update_trap as ps
    ref = load_solution("per_step_update_trap")
    N, C_in, C_out, L, K, stride, pad = sizes.conv
    L_out = (L + 2 * pad - K) // stride + 1
    x = rng.standard_normal((N, C_in, L)).astype(dtype)           # N, C_in, L
    w = rng.standard_normal((C_out, C_in, K)).astype(dtype)       # C_out, C_in, K
    b = rng.standard_normal(C_out).astype(dtype)                  # C_out
    dout = rng.standard_normal((N, C_out, L_out)).astype(dtype)   # N, C_out, L_out
    d_x, d_w, d_b, d_dout = (cuda.to_device(a) for a in (x, w, b, dout))
    out = cuda.device_array(dout.shape, dtype=dtype)
    dx = cuda.device_array(x.shape, dtype=dtype)
    tpb, values = ps.THREADS_PER_BLOCK, C_out * C_in * K
    parts = blocks(N * L_out, tpb, cap=ps.MAX_PARTIALS)  # stage-1 blocks per reduced value
    w_parts, b_parts = (cuda.device_array((rows, parts), dtype=dtype) for rows in (values, C_out))
    dw, db = cuda.device_array(values, dtype=dtype), cuda.device_array(C_out, dtype=dtype)
    grid = lambda total: (blocks(total, tpb, cap=ps.MAX_BLOCKS), tpb)

    def backward_weight():  # stage 1 then stage 2, for dw and for db
        ps.reduction_launch(ps.conv1d_backward_weight_partials_kernel, (values, parts), tpb)(d_dout, d_x, K, stride, pad, w_parts)
        ps.reduction_launch(ps.sum_partials_kernel, values, tpb)(w_parts, dw)
        ps.reduction_launch(ps.conv1d_backward_bias_partials_kernel, (C_out, parts), tpb)(d_dout, b_parts)
        ps.reduction_launch(ps.sum_partials_kernel, C_out, tpb)(b_parts, db)

    def torch_conv(device):
        import torch
        import torch.nn.functional as F
        x_t, w_t, b_t, dout_t = on_torch(device, x, w, b, dout)
        return {"forward": lambda: {"out": F.conv1d(x_t, w_t, b_t, stride, pad)},
                "data": lambda: {"dx": torch.nn.grad.conv1d_input(x.shape, w_t, dout_t, stride, pad)},
                "weight": lambda: {"dw": torch.nn.grad.conv1d_weight(x_t, w.shape, dout_t, stride, pad),
                                   "db": dout_t.sum((0, 2))}}

    grads = lambda: dict(zip(("dx", "dw", "db"), ref.conv1d_backward(dout, x, w, stride, pad)))
    flops, cfg = 2 * N * C_out * L_out * C_in * K, f"C{C_in}->{C_out} K{K} s{stride} p{pad}"
    return [
        Case(f"conv1d forward ({cfg})", {"x": d_x, "w": d_w, "b": d_b}, {"out": out},
             lambda: ps.conv1d_forward_kernel[grid(out.size)](d_x, d_w, d_b, stride, pad, out),
             lambda: {"out": ref.conv1d_forward(x, w, b, stride, pad)},
             lambda dev: torch_conv(dev)["forward"], flops),
        Case(f"conv1d backward-data ({cfg})", {"dout": d_dout, "w": d_w}, {"dx": dx},
             lambda: ps.conv1d_backward_data_kernel[grid(dx.size)](d_dout, d_w, stride, pad, dx),
             lambda: {"dx": grads()["dx"]}, lambda dev: torch_conv(dev)["data"], flops),
        Case(f"conv1d backward-weight + bias ({cfg})", {"dout": d_dout, "x": d_x},
             {"dw": dw, "db": db}, backward_weight,
             lambda: {k: v for k, v in grads().items() if k != "dx"},
             lambda dev: torch_conv(dev)["weight"], flops),
    ]


def ce_cases(sizes, dtype, rng):
    from numba import cuda
    from backprop_traps.grader.loading.reference import load_solution
    from backprop_traps.kernels import softmax_ce as sc
    ref = load_solution("softmax_ce")
    N, K = sizes.ce
    logits = rng.uniform(-10, 10, size=(N, K)).astype(dtype)   # N, K
    labels = rng.integers(0, K, size=N).astype(np.int64)       # N
    kernel = sc._fused_kernel(sc.THREADS_PER_BLOCK, dtype)     # the module's own compiled kernel

    def expected():
        _, dlogits = ref.softmax_cross_entropy(logits, labels)
        losses = [ref.softmax_cross_entropy(logits[i:i + 1], labels[i:i + 1])[0] for i in range(N)]
        return {"losses": np.array(losses), "dlogits": dlogits}

    def torch_ce(device):
        import torch
        import torch.nn.functional as F
        logits_t, labels_t = on_torch(device, logits, labels)

        def run():  # reduction="none" so the per-row losses can be compared, then the mean
            lt = logits_t.detach().requires_grad_()
            losses = F.cross_entropy(lt, labels_t, reduction="none")
            return {"losses": losses.detach(), "dlogits": torch.autograd.grad(losses.mean(), lt)[0]}
        return run

    cases = []
    for inplace in (False, True):
        d_logits, d_labels = cuda.to_device(logits), cuda.to_device(labels)
        d_losses = cuda.device_array(N, dtype=dtype)
        d_dlogits = d_logits if inplace else cuda.device_array((N, K), dtype=dtype)
        launch = (lambda lg=d_logits, lb=d_labels, ls=d_losses, dl=d_dlogits:
                  kernel[N, sc.THREADS_PER_BLOCK](lg, lb, dtype.type(N), ls, dl))
        cases.append(Case(f"cross-entropy fwd+bwd fused{', in place' if inplace else ''} (K={K})",
                          {"logits": d_logits, "labels": d_labels},
                          {"losses": d_losses, "dlogits": d_dlogits}, launch, expected, torch_ce))
    return cases


def linear_cases(sizes, dtype, rng):
    from numba import cuda
    from backprop_traps.grader.loading.reference import load_solution
    from backprop_traps.kernels import vram_trap as vt
    ref = load_solution("vram_trap")
    N, D_in, D_out = sizes.linear
    h = rng.standard_normal((N, D_in)).astype(dtype)       # N, D_in
    W = rng.standard_normal((D_in, D_out)).astype(dtype)   # D_in, D_out
    b = rng.standard_normal(D_out).astype(dtype)           # D_out
    da = rng.standard_normal((N, D_out)).astype(dtype)     # N, D_out
    z64 = h.astype(np.float64) @ W + b                      # N, D_out
    a_ref, mask = ref.relu_forward_packed(z64)
    d_h, d_W, d_b, d_da, d_mask = (cuda.to_device(arr) for arr in (h, W, b, da, mask))
    a, a_mask = cuda.device_array((N, D_out), dtype=dtype), cuda.device_array(mask.shape, dtype=np.uint8)
    dh, dW, db = (cuda.device_array(s, dtype=dtype) for s in (h.shape, W.shape, D_out))
    tpb, zero = vt.THREADS_PER_BLOCK, dtype.type(0)

    d_partials = cuda.device_array(vt.partials_shape(N, D_in, D_out), dtype=dtype)

    def backward():
        vt.backward_params(d_da, d_mask, True, d_h, dW, db, zero, d_partials=d_partials)
        vt.backward_input(d_da, d_mask, True, d_W, dh, zero)

    def grads():
        dz = ref.relu_backward_packed(da.astype(np.float64), mask, da.shape)
        return {"dh": dz @ W.T, "dW": h.T @ dz, "db": dz.sum(axis=0)}

    def torch_linear(device):
        import torch
        h_t, W_t, b_t, da_t = on_torch(device, h, W, b, da)
        a_t = torch.relu(torch.addmm(b_t, h_t, W_t))  # autograd keeps a float a; we keep the bits

        def backward_t():
            dz = torch.ops.aten.threshold_backward(da_t, a_t, 0)
            return {"dh": dz @ W_t.T, "dW": h_t.T @ dz, "db": dz.sum(0)}
        return {"forward": lambda: {"a": torch.relu(torch.addmm(b_t, h_t, W_t))}, "backward": backward_t}

    cfg, per_mask_byte = f"{D_in}->{D_out}", (blocks(a_mask.size, tpb), tpb)
    return [
        Case(f"linear+ReLU forward, bit mask ({cfg})", {"h": d_h, "W": d_W, "b": d_b},
             {"a": a, "mask": a_mask},
             lambda: vt.linear_relu_forward_kernel[per_mask_byte](d_h, d_W, d_b, a, a_mask, zero),
             lambda: {"a": a_ref, "mask": mask}, lambda dev: torch_linear(dev)["forward"],
             2 * N * D_in * D_out),
        Case(f"linear+ReLU backward from the mask ({cfg})",
             {"da": d_da, "mask": d_mask, "h": d_h, "W": d_W}, {"dh": dh, "dW": dW, "db": db},
             backward, grads, lambda dev: torch_linear(dev)["backward"], 4 * N * D_in * D_out),
    ]


def question_cases(question: str):
    """A builder for a question's own cases file, ``benchmarks/cases_<question>.py``, whose
    ``cases(tiny, dtype, rng)`` picks its TINY or LARGE shapes itself."""
    def build(sizes, dtype, rng):
        import importlib
        module = importlib.import_module(f"benchmarks.cases_{question}")
        return module.cases(sizes is TINY, dtype, rng)
    build.__name__ = f"{question}_cases"
    return build


QUESTION_FILES = ("layernorm_backward", "attention_backward", "loss_scaling", "grad_accumulation",
                  "reparameterisation", "batchnorm_backward", "backprop_ninja", "adamw_step",
                  "gradient_clinic", "bptt", "residual_backward", "training_symptoms",
                  "forward_vs_reverse", "straight_through", "maxpool_kernel",
                  "custom_function", "memory_budget")
BUILDERS = (pool_cases, conv_cases, ce_cases, linear_cases) + tuple(question_cases(q) for q in QUESTION_FILES)


def build_cases(sizes, dtype, seed=0, builders=BUILDERS):
    """Every case of the given builders, inputs drawn from one seeded generator."""
    rng, dtype = np.random.default_rng(seed), np.dtype(dtype)
    return [case for build in builders for case in build(sizes, dtype, rng)]
