"""What every cases file shares: ``Case`` (one timed op), ``Arrays`` (where its inputs come
from), ``solution`` (the references), ``compare`` (the correctness check) and ``on_torch``
(PyTorch's copies of the inputs)."""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable

import numpy as np

from backprop_traps.kernels.runtime.dry_run import ShapeOnly
from backprop_traps.kernels.runtime.solutions import load_solution

TOLERANCE = {"float64": (1e-9, 1e-12), "float32": (1e-4, 1e-5)}  # rtol, atol against the solutions


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
    elements: int = 0            # what "per element" counts (benchmarks/kernels_static.py): the
                                 # largest array the op writes, unless the cases file says

    def __post_init__(self):
        if not self.elements and self.writes:
            self.elements = max(a.size for a in self.writes.values())

    def moved_bytes(self) -> int:
        return sum(a.nbytes for a in self.reads.values()) + sum(a.nbytes for a in self.writes.values())

    def buffer_bytes(self) -> int:
        """What the op allocates beyond its inputs: outputs that do not overwrite an input."""
        return sum(a.nbytes for a in self.writes.values()
                   if all(a is not r for r in self.reads.values()))


class Arrays:
    """Where a builder's host inputs come from: drawn from ``rng``, or, in a dry run
    (kernels/runtime/dry_run.py), stand-ins of the declared shapes that hold no memory.

    ``make(spec, fill)``: ``spec`` declares each input, ``name: (shape, dtype)`` for an array,
    ``name: number`` for a scalar (the number is its dry-run value); ``fill(rng)`` returns the
    real values by name. A real build checks them against the declaration, so the dry run
    sees exactly the shapes a GPU run would launch."""

    def __init__(self, rng, dry: bool = False):
        self.rng, self.dry = rng, dry

    def make(self, spec: dict, fill: Callable) -> SimpleNamespace:
        if self.dry:
            return SimpleNamespace(**{name: ShapeOnly(*decl) if isinstance(decl, tuple) else decl
                                      for name, decl in spec.items()})
        values = fill(self.rng)
        assert set(values) == set(spec), f"declared {sorted(spec)}, made {sorted(values)}"
        for name, decl in spec.items():
            if isinstance(decl, tuple):
                shape, dtype = (decl[0],) if isinstance(decl[0], int) else tuple(decl[0]), np.dtype(decl[1])
                got = values[name]
                assert got.shape == shape and got.dtype == dtype, \
                    f"{name}: declared {shape} {dtype}, made {got.shape} {got.dtype}"
        return SimpleNamespace(**values)


def compare(got, expected, dtype_name):
    """(ok, largest absolute difference) of each expected array against the kernel's."""
    rtol, atol = TOLERANCE[dtype_name]
    ok, err = True, 0.0
    for name, want in expected.items():
        g = np.ravel(got[name]).astype(np.float64)
        w = np.ravel(np.asarray(want)).astype(np.float64)
        if g.shape != w.shape:
            return False, float("inf")
        ok &= bool(np.allclose(g, w, rtol=rtol, atol=atol))
        err = max(err, float(np.max(np.abs(g - w), initial=0.0)))
    return ok, err


def solution(question: str):
    """The question's solution notebook as a namespace of its functions: what a case's expected
    output is computed with (kernels/runtime/solutions.py reads it; nothing of the grader's)."""
    return load_solution(question)


def on_torch(device, *arrays):
    import torch
    return [torch.from_numpy(np.ascontiguousarray(a)).to(device) for a in arrays]


def zero_fill(d_array):
    """Zero a device array with a memset (no kernel of ours); nothing to do in a dry run."""
    if isinstance(d_array, ShapeOnly):
        return
    import importlib
    from backprop_traps.kernels.runtime.device import cuda
    driver = importlib.import_module(f"{cuda.__name__}.cudadrv.driver")  # numba.cuda's or numba_cuda_mlir.cuda's
    driver.device_memset(d_array, 0, d_array.nbytes)
