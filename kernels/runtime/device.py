"""Where every kernel module gets ``cuda``:

    from backprop_traps.kernels.runtime.device import cuda

It is numba-cuda's ``numba.cuda`` (with NUMBA_ENABLE_CUDASIM=1, its CPU simulator), unless
the user asks for numba-cuda's maintained successor with ``BACKPROP_TRAPS_CUDA=mlir``. Then
it is ``numba_cuda_mlir.cuda``, when numba-cuda-mlir is installed
(``pip install 'backprop-traps[gpu]'``) and sees a GPU. Asked for but unusable (not
installed, no GPU, or the simulator chosen: numba-cuda-mlir has none), one sentence on
stderr says why and numba.cuda is used. ``BACKEND`` names the choice.

Under the simulator this module also installs the simulator's fix (kernels/runtime/simulator_fixes.py)
and the launch-limit check (kernels/runtime/launch_limits.py), so that any import of a kernel module
gets them. The choice is made once, at the first import: set the variables before it.
tests/kernels/test_device.py tests the choice both ways with a mocked import.
"""
from __future__ import annotations

import importlib
import os
import sys

ENV = "BACKPROP_TRAPS_CUDA"
CHOICES = ("numba", "mlir")


def choose(environ=os.environ, import_module=importlib.import_module):
    """(the cuda module, its backend's name, a sentence when the user's ask was not met, or None)."""
    raw = environ.get(ENV, "")
    asked, note = raw.strip().lower() or "numba", None
    if asked not in CHOICES:
        note = f"{ENV}={raw!r} is not one of {', '.join(CHOICES)}: using numba-cuda."
    elif asked == "mlir":
        if environ.get("NUMBA_ENABLE_CUDASIM") == "1":
            note = (f"{ENV}=mlir is ignored under the simulator (NUMBA_ENABLE_CUDASIM=1): "
                    "numba-cuda-mlir has no simulator, so numba-cuda's runs the kernels.")
        else:
            try:
                mlir = import_module("numba_cuda_mlir.cuda")
            except ImportError as exc:
                note = (f"{ENV}=mlir asks for numba-cuda-mlir, which does not import here ({exc}); "
                        "pip install 'backprop-traps[gpu]' installs it. Using numba-cuda.")
            else:
                try:
                    present = bool(mlir.is_available())
                except Exception as exc:  # noqa: BLE001 (a broken driver is "no GPU", said plainly)
                    present, why = False, f" ({type(exc).__name__}: {exc})"
                else:
                    why = ""
                if present:
                    return mlir, "numba-cuda-mlir", None
                note = (f"{ENV}=mlir asks for numba-cuda-mlir, which sees no GPU here{why}: "
                        "using numba-cuda.")
    cuda = import_module("numba.cuda")
    return cuda, "numba-cuda simulator" if _is_simulator(cuda) else "numba-cuda", note


def _is_simulator(cuda) -> bool:
    return getattr(cuda.is_available, "__module__", "").startswith("numba.cuda.simulator")


def simulated() -> bool:
    """True when the kernels run in numba-cuda's CPU simulator."""
    return BACKEND == "numba-cuda simulator"


cuda, BACKEND, NOTE = choose()
if NOTE:
    print(NOTE, file=sys.stderr)
if simulated():
    from backprop_traps.kernels.runtime import launch_limits, simulator_fixes
    simulator_fixes.install()
    launch_limits.install()
