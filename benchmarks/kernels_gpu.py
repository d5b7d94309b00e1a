"""Benchmark: every Numba CUDA kernel on a real GPU, against the memory roofline and PyTorch.

Run: python benchmarks/kernels_gpu.py [--runs 50] [--warmup 5] [--simulator | --simulate] [--out PATH]
(or `grade bench`). On a GPU it first runs every kernel on tiny shapes in float64 and
float32 against the solution notebooks (correctness with the real compiler), then times
each one in fp32 at sizes that move well over 100 MB: CUDA events around each launch,
median of --runs after --warmup launches, on device arrays made beforehand (no host copies
and no allocations inside the timed region). Per kernel it reports the bytes model (every
input read once, every output written once: a lower bound on the traffic), the achieved
GB/s and its fraction of a device-to-device copy measured in the same run (copy bandwidth
counts the read and the write), and, where torch with CUDA imports, PyTorch's own op on the
same GPU with TF32 off, the largest difference between the two, and the memory each
allocates beyond its inputs. It writes a markdown table to benchmarks/results/kernels_gpu.md.

Without a GPU (or with --simulator) it times nothing and prints no bandwidth: it says so
and runs the same tiny correctness pass under the Numba CUDA simulator in a child process
(NUMBA_ENABLE_CUDASIM=1 must be set before numba.cuda is imported), and records only that.
A file that already holds a GPU measurement is not overwritten by a run without a GPU.
``--simulate`` runs the GPU path itself (checks, copy, every case timed, the table written as it
goes) on the simulator at the tiny sizes: what benchmarks/gpu_session.py --simulate runs; its
"times" are the simulator's, so the table shows none.

The table is written after every case, so a run stopped at its budget keeps what it measured; a
case that fails (to build, compile, launch or compare) is a row saying why, and the run goes on.

The in-place cross-entropy case overwrites its logits on every launch; later launches read
gradients instead of logits, which costs the same. Conv and linear are naive reference
kernels (no tiling): their bytes model is far below their real traffic.
The cases themselves (arrays, launches, references, PyTorch's ops) are in the installed package,
kernels/cases/ (one file per kernel module): this script imports them, never the reverse.
``--only TEXT`` keeps the cases whose name holds TEXT, ``--max-seconds S`` stops timing (and
says so in the table) once S seconds have gone since the process started (its imports and the
tiny checks count): a GPU session's budget (benchmarks/gpu_session.py). ``--dtypes float32``
checks in one dtype (the session's compute-sanitizer passes: half the compiles).
"""
from __future__ import annotations

import time

_STARTED = time.monotonic()  # --max-seconds counts from here: the process's start, before numpy loads

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script from a checkout: make `backprop_traps` importable
    sys.path.insert(0, str(REPO))
if "--simulate" in sys.argv[1:]:  # the simulator is chosen before numba.cuda first loads
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

import numpy as np  # noqa: E402

from backprop_traps.kernels.cases import QUESTIONS, build_cases  # noqa: E402
from backprop_traps.kernels.cases.common import TOLERANCE, compare  # noqa: E402,F401  (the benchmark's names)
# the markdown (benchmarks/kernels_gpu_table.py); MEASURED_MARK and check_table are the benchmark's names too
from benchmarks.kernels_gpu_table import (MEASURED_MARK, check_table, gpu_markdown,  # noqa: E402,F401
                                          no_gpu_markdown, write)

RESULTS = REPO / "benchmarks" / "results" / "kernels_gpu.md"
SIMULATED = Path(tempfile.gettempdir()) / "kernels_gpu_simulated.md"  # a rehearsal never lands in results/


# ---------------------------------------------------------------- correctness: tiny shapes vs the solutions

def elapsed() -> float:
    """Seconds since this process started (as near as Python sees it)."""
    return time.monotonic() - _STARTED


def check_all(size="tiny", questions=QUESTIONS, dtypes=("float64", "float32")):
    """Launch every case once in each dtype; one row per (kernel, dtype). Each line of progress
    goes to stderr as it happens (a log that a budget cut short still says how far it got)."""
    rows = []
    for dtype in dtypes:
        name = np.dtype(dtype).name
        for case in build_cases(size, dtype, questions=questions):
            row = {"kernel": case.name, "dtype": name, "ok": False, "max_err": None, "error": None}
            try:
                case.launch()
                got = {key: array.copy_to_host() for key, array in case.writes.items()}
                row["ok"], row["max_err"] = compare(got, case.expected(), name)
            except Exception as exc:  # a kernel that fails to compile or launch is a result
                row["error"] = f"{type(exc).__name__}: {exc}"[:300]
            rows.append(row)
            print(f"checked {case.name} ({name}): {'ok' if row['ok'] else 'FAIL'} at {elapsed():.0f} s",
                  file=sys.stderr, flush=True)
    return rows


def smoke_in_child(timeout=600):
    """check_all under the simulator, in a child process: the variable must precede numba.cuda."""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--check-only"],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("[")]
    if not lines:
        raise RuntimeError(f"the simulator smoke pass failed (exit {proc.returncode}):\n"
                           + proc.stderr[-3000:])
    return json.loads(lines[-1])


def gpu_status():
    """(True, device name) with a usable CUDA GPU, else (False, why not)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return False, "NUMBA_ENABLE_CUDASIM=1 is set: numba.cuda is the simulator, not a GPU"
    try:
        from numba import cuda
        if cuda.is_available():
            name = cuda.get_current_device().name
            return True, name.decode() if isinstance(name, bytes) else str(name)
    except Exception as exc:  # a broken driver install is "no GPU", said plainly
        return False, f"numba.cuda could not start: {type(exc).__name__}: {exc}"
    return False, "numba.cuda.is_available() is False: no CUDA GPU or driver on this machine"


# ---------------------------------------------------------------- timing (only ever on a real device)

def median_ms(fn, runs, warmup, make_event):
    """Median of `runs` event-timed calls, queued back to back after `warmup` calls."""
    for _ in range(warmup):
        fn()
    events = [(make_event(), make_event()) for _ in range(runs)]
    for start, end in events:
        start.record()
        fn()
        end.record()
    events[-1][1].synchronize()
    return statistics.median(start.elapsed_time(end) for start, end in events)


def copy_bandwidth(nbytes, runs, warmup):
    """GB/s of a device-to-device copy of `nbytes`, counting the read and the write."""
    from numba import cuda
    src, dst = cuda.device_array(nbytes, np.uint8), cuda.device_array(nbytes, np.uint8)
    ms = median_ms(lambda: dst.copy_to_device(src), runs, warmup, cuda.event)
    return 2 * nbytes / ms / 1e6  # GB/s


def torch_cuda():
    """torch, TF32 off, if it imports with CUDA; else None."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    return torch


def measure(cases, runs, warmup, copy_gbps, torch=None):
    """One row per case: the kernel's time and bandwidth and, with torch, PyTorch's op beside it."""
    return [measure_one(case, runs, warmup, copy_gbps, torch) for case in cases]


def measure_one(case, runs, warmup, copy_gbps, torch=None):
    """A case's row; one that fails says why (``error``) and the run goes on to the next."""
    from numba import cuda
    row = {"kernel": case.name, "mb": case.moved_bytes() / 1e6, "buffers_mb": case.buffer_bytes() / 1e6,
           "gflop": case.flops / 1e9}
    try:
        case.launch()  # compiles; its result is the one compared (the in-place case's logits are fresh)
        cuda.synchronize()
        if torch is not None:
            row.update(torch_side(case, runs, warmup, torch))
        row["ms"] = median_ms(case.launch, runs, warmup, cuda.event)
        row["gbps"] = row["mb"] / row["ms"]  # MB per ms = GB/s
        row["of_copy"] = row["gbps"] / copy_gbps
    except Exception as exc:  # noqa: BLE001 (a kernel that fails on the device is a result)
        row["error"] = f"{type(exc).__name__}: {exc}"[:300]
    return row


def torch_side(case, runs, warmup, torch):
    """PyTorch's op for the case: its time, its memory and its largest difference from ours."""
    try:
        run = case.torch_op("cuda")
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        result = run()
        torch.cuda.synchronize()
        side = {"torch_buffers_mb": (torch.cuda.max_memory_allocated() - base) / 1e6,
                "diff": max((torch.as_tensor(case.writes[key], device="cuda").double().flatten()
                             - value.double().flatten()).abs().max().item() for key, value in result.items())}
        del result
        side["torch_ms"] = median_ms(run, runs, warmup, lambda: torch.cuda.Event(enable_timing=True))
        del run
        torch.cuda.empty_cache()
        return side
    except Exception as exc:  # noqa: BLE001 (PyTorch's failure is not our kernel's)
        return {"torch_error": f"{type(exc).__name__}: {exc}"[:200]}


def timed_run(device, questions, args, simulated=False) -> tuple[str, bool]:
    """The GPU path (or its rehearsal on the simulator): the checks, then each module's cases
    timed, the table rewritten after each. (the last text, whether everything passed)"""
    size, copy_bytes = ("tiny", 1 << 20) if simulated else ("large", 1 << 30)
    warnings.filterwarnings("ignore", message="Grid size")  # tiny checks under-fill the GPU
    checks = check_all("tiny", questions)
    torch = None if simulated else torch_cuda()
    copy_gbps = copy_bandwidth(copy_bytes, args.runs, args.warmup)
    rows = []

    def save(pending):
        text = gpu_markdown(device, args.runs, args.warmup, copy_gbps, rows, checks, torch, simulated, pending,
                            elapsed())
        write(text, args.out, measured=not simulated, quiet=True)
        return text

    for at, question in enumerate(questions):  # one module's arrays at a time
        save(questions[at:])
        if args.max_seconds and elapsed() > args.max_seconds:
            rows.append({"kernel": f"{question}: not timed (--max-seconds {args.max_seconds:g} spent)"})
            continue
        try:
            cases = [c for c in build_cases(size, np.float32, questions=(question,)) if args.only in c.name]
        except Exception as exc:  # noqa: BLE001 (out of memory, say: the other modules still run)
            rows.append({"kernel": f"{question}: cases not built ({type(exc).__name__}: {exc})"[:300]})
            continue
        for case in cases:
            rows.append(measure_one(case, args.runs, args.warmup, copy_gbps, torch))
            print(f"timed {case.name}: {'FAILED' if 'error' in rows[-1] else 'ok'} at {elapsed():.0f} s",
                  file=sys.stderr, flush=True)
            save(questions[at:])
        del cases
    text = save(())
    print(f"wrote {args.out}")
    passed = all(r["ok"] for r in checks) and not any("error" in r or "torch_error" in r for r in rows)
    return text, passed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50, help="timed launches per kernel (median)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed launches first")
    parser.add_argument("--simulator", action="store_true",
                        help="time nothing: only the simulator smoke pass, even with a GPU")
    parser.add_argument("--simulate", action="store_true",
                        help="rehearse the GPU run on the simulator at tiny sizes (its table shows no times)")
    parser.add_argument("--out", type=Path, help=f"where the markdown goes [{RESULTS.relative_to(REPO)}; "
                                                 f"with --simulate, {SIMULATED.name} in the temporary folder]")
    parser.add_argument("--only", default="", metavar="TEXT", help="time only the cases whose name holds TEXT")
    parser.add_argument("--questions", default=",".join(QUESTIONS), metavar="A,B",
                        help="the kernel modules whose cases run (kernels/cases/<name>.py); default: all")
    parser.add_argument("--max-seconds", type=float, default=0, metavar="S",
                        help="stop timing new kernel modules once S seconds have gone since the process "
                             "started (0: no limit)")
    parser.add_argument("--dtypes", default="float64,float32", metavar="A,B", help="the tiny checks' dtypes")
    parser.add_argument("--check-only", action="store_true", help=argparse.SUPPRESS)  # the child
    args = parser.parse_args(argv)
    questions = tuple(q for q in args.questions.split(",") if q)
    unknown = sorted(set(questions) - set(QUESTIONS))
    if unknown:
        parser.error(f"no cases for {', '.join(unknown)}: choose from {', '.join(QUESTIONS)}")
    args.out = args.out or (SIMULATED if args.simulate else RESULTS)
    dtypes = tuple(d for d in args.dtypes.split(",") if d)
    if not dtypes or set(dtypes) - {"float64", "float32"}:
        parser.error(f"--dtypes takes float64 and/or float32, not {args.dtypes!r}")

    if args.check_only:
        checks = check_all("tiny", questions, dtypes)  # kernels/runtime/device.py installs the simulator's fix on import
        print(json.dumps(checks))
        return 0 if all(r["ok"] for r in checks) else 1

    if args.simulate:
        if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
            parser.error("--simulate chooses the simulator before numba.cuda loads: give it on the command line "
                         "(python benchmarks/kernels_gpu.py --simulate)")
        print("Rehearsing the GPU run on the Numba CUDA simulator at tiny sizes: nothing is measured.", flush=True)
        text, passed = timed_run("the Numba CUDA simulator", questions, args, simulated=True)
        return 0 if passed else 1
    present, device = (False, "--simulator was given") if args.simulator else gpu_status()
    if present:
        print(f"GPU: {device}. Checking every kernel on tiny shapes, then timing.", flush=True)
        text, passed = timed_run(device, questions, args)
        print(text)
        return 0 if passed else 1
    print(f"No GPU: {device}. Nothing is timed; running the simulator smoke pass instead.", flush=True)
    checks = smoke_in_child()
    text = no_gpu_markdown(device, checks)
    print(text)
    write(text, args.out, measured=False)
    return 0 if checks and all(r["ok"] for r in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
