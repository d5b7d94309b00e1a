"""What every kernel file's ``__main__`` runs: check its kernels against the solution notebook
(the CPU reference) on the benchmark's tiny cases, in float64 and float32, and time them.

``python -m backprop_traps.kernels.<file>``, from any folder: the tiny cases come with the
installed package (kernels/cases/), so a wheel checks its own kernels. Without a GPU the
file's header has already chosen Numba's CUDA simulator, and the times are the simulator's
(Python threads: a smoke test, not a measurement); on a GPU they are the device's, and
benchmarks/kernels_gpu.py measures properly (large sizes, CUDA events, PyTorch beside).
Nothing here imports benchmarks/: the benchmark imports the kernels, never the reverse.
"""
import sys
import time

import numpy as np


def main(question: str, runs: int = 3) -> int:
    from backprop_traps.kernels import cases
    from backprop_traps.kernels.cases.common import compare
    from backprop_traps.kernels.runtime.device import BACKEND, cuda, simulated
    where = "the Numba CUDA simulator" if simulated() else f"{cuda.get_current_device().name} ({BACKEND})"
    print(f"{question}: its kernels (kernels/cases/{cases.module(question).__name__.rsplit('.', 1)[-1]}.py) "
          f"against the solution notebooks, on {where}")
    failed = 0
    for dtype in (np.float64, np.float32):
        for case in cases.build_cases("tiny", dtype, questions=(question,)):
            case.launch()  # checked on the first launch: an in-place case then overwrites its input
            cuda.synchronize()
            got = {name: array.copy_to_host() for name, array in case.writes.items()}
            ok, err = compare(got, case.expected(), np.dtype(dtype).name)
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                case.launch()
                cuda.synchronize()
                times.append(time.perf_counter() - start)
            failed += not ok
            print(f"  {'ok  ' if ok else 'FAIL'} {np.dtype(dtype).name:8} {sorted(times)[runs // 2] * 1e3:9.2f} ms  "
                  f"max err {err:.1e}  {case.name}")
    return 1 if failed else 0


def choose_simulator_without_a_gpu():
    """For a kernel file run as a script: the simulator where no NVIDIA driver is installed
    (it must be chosen before numba.cuda is first imported)."""
    import os
    import shutil
    if shutil.which("nvidia-smi") is None:
        os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
