"""The benchmark's cases: every kernel launch on arrays made beforehand, with its references.

One file per kernel module, ``kernels/cases/<question>.py``, each with three sizes and one
builder, ``cases(shape, dtype, arrays) -> [Case]``:
  TINY   a few hundred threads a launch: the simulator runs it (``python -m
         backprop_traps.kernels.<id>``, the benchmark's smoke pass, the static compile);
  LARGE  what benchmarks/kernels_gpu.py times on a GPU (> 100 MB per op in fp32);
  HUGE   shapes that fill an 80 GB GPU along one axis each (in fp32), never allocated: the
         launch-limit test dry-runs them (kernels/runtime/dry_run.py), as it does LARGE.
Each Case holds the device arrays an op reads and writes (the bytes model counts each once),
the launch itself (a launcher of the kernel module, ``*_device``, with no allocation or host
copy inside), the solution notebook's answer, and PyTorch's own op for the same job. The
builders take their ``cuda`` from kernels/runtime/device.py when called: the caller picks the
simulator or the GPU first. Installed with the kit, so a kernel file checks itself from a
wheel; benchmarks/ imports this package, never the reverse.

Versions. A question's teaching kernel is version 1, ``kernels/<question>.py``; where a faster
one exists (llm.c's numbered kernels in dev/cuda) it is version 2, ``kernels/<question>_v2.py``
beside it, with launchers of its own and a case of its own in the same cases file, named by
its version and what changed: "max-pool forward + argmax, v2: flat unsigned index (k3 s2)".
The benchmark then times both side by side, the static table compiles both, and the
launch-limit test checks both (it fails while a kernel or a launcher has no case).
"""
from __future__ import annotations

import importlib

import numpy as np

from backprop_traps.kernels.cases.common import Arrays, Case  # noqa: F401  (the package's names)

# Cases files, in the order the benchmark runs them (one per kernel module that launches).
QUESTIONS = ("routing_trap", "per_step_update_trap", "softmax_ce", "vram_trap",
             "layernorm_backward", "attention_backward", "loss_scaling", "grad_accumulation",
             "reparameterisation", "batchnorm_backward", "backprop_ninja", "adamw_step",
             "gradient_clinic", "bptt", "forward_vs_reverse", "straight_through", "maxpool_kernel",
             "residual_backward", "training_symptoms", "custom_function", "memory_budget",
             "ddp_accumulation",
             "rmsnorm_rope_backward",
             "moe_router_backward",
             "weight_tying",
             "embedding_backward",
             "tensor_parallel_linear",
             )
# Kernel modules with no cases file of their own: they launch another module's kernels.
CASES_OF = {"mlp_backprop": "vram_trap"}
SIZES = ("tiny", "large", "huge")
GPU_BYTES = 80 * 10 ** 9  # HUGE's budget: an 80 GB GPU


def module(question: str):
    return importlib.import_module(f"backprop_traps.kernels.cases.{CASES_OF.get(question, question)}")


def shapes(question: str, size: str) -> list:
    """The shapes a question's cases take at a size: one for tiny and large, several for huge."""
    mod = module(question)
    if size not in SIZES:
        raise ValueError(f"size is one of {', '.join(SIZES)}, not {size!r}")
    return [mod.TINY] if size == "tiny" else [mod.LARGE] if size == "large" else list(mod.HUGE)


def build_cases(size, dtype, seed=0, questions=QUESTIONS, dry=False) -> list:
    """Every case of the given questions at a size, inputs drawn from one seeded generator
    (or, with ``dry``, stand-ins: inside kernels/runtime/dry_run.py's ``dry_run()`` only)."""
    arrays, dtype = Arrays(np.random.default_rng(seed), dry), np.dtype(dtype)
    return [case for question in questions for shape in shapes(question, size)
            for case in module(question).cases(shape, dtype, arrays)]
