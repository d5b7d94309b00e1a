"""What every kernel file's ``__main__`` runs: check its kernels against the solution notebook
(the CPU reference) on the benchmark's tiny cases, in float64 and float32, and time them.

``python -m backprop_traps.kernels.<file>`` from the repository root (benchmarks/ must be importable). Without
a GPU the file's header has already chosen Numba's CUDA simulator, and the times are the
simulator's (Python threads: a smoke test, not a measurement); on a GPU they are the device's,
and benchmarks/kernels_gpu.py measures properly (large sizes, CUDA events, PyTorch beside).
"""
import sys
import time

import numpy as np

BUILDER = {"routing_trap": "pool_cases", "per_step_update_trap": "conv_cases", "softmax_ce": "ce_cases",
           "vram_trap": "linear_cases", "mlp_backprop": "linear_cases"}  # mlp_backprop launches vram_trap's


def main(question: str, runs: int = 3) -> int:
    from numba import cuda
    from benchmarks import kernel_cases
    from benchmarks.kernels_gpu import compare
    if question in BUILDER:
        build = getattr(kernel_cases, BUILDER[question])
    else:
        build = kernel_cases.question_cases(question)
    where = "the Numba CUDA simulator" if cuda.is_available.__module__.startswith("numba.cuda.simulator") \
        else cuda.get_current_device().name
    print(f"{question}: its kernels ({build.__name__}) against the solution notebooks, on {where}")
    failed = 0
    for dtype in (np.float64, np.float32):
        for case in build(kernel_cases.TINY, np.dtype(dtype), np.random.default_rng(0)):
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
