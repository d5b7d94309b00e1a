"""Benchmark: every Numba CUDA kernel on a real GPU, against the memory roofline and PyTorch.

Run: python benchmarks/kernels_gpu.py [--runs 50] [--warmup 5] [--simulator] [--out PATH]
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

The in-place cross-entropy case overwrites its logits on every launch; later launches read
gradients instead of logits, which costs the same. Conv and linear are naive reference
kernels (no tiling): their bytes model is far below their real traffic.
The cases themselves (arrays, launches, references, PyTorch's ops) are in the installed package,
kernels/cases/ (one file per kernel module): this script imports them, never the reverse.
``--only TEXT`` keeps the cases whose name holds TEXT, ``--max-seconds S`` stops timing (and
says so in the table) once S seconds have gone: a GPU session's budget (benchmarks/gpu_session.sh).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script from a checkout: make `backprop_traps` importable
    sys.path.insert(0, str(REPO))

from backprop_traps.kernels.cases import QUESTIONS, build_cases  # noqa: E402
from backprop_traps.kernels.cases.common import TOLERANCE, compare  # noqa: E402,F401  (the benchmark's names)

RESULTS = REPO / "benchmarks" / "results" / "kernels_gpu.md"
MEASURED_MARK = "<!-- measured on a GPU -->"


# ---------------------------------------------------------------- correctness: tiny shapes vs the solutions

def check_all(size="tiny", questions=QUESTIONS):
    """Launch every case once in float64 and float32; one row per (kernel, dtype)."""
    rows = []
    for dtype in (np.float64, np.float32):
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
    from numba import cuda
    rows = []
    for case in cases:
        case.launch()  # compiles; its result is the one compared (the in-place case's logits are fresh)
        cuda.synchronize()
        row = {"kernel": case.name, "mb": case.moved_bytes() / 1e6, "buffers_mb": case.buffer_bytes() / 1e6,
               "gflop": case.flops / 1e9}
        if torch is not None:
            run = case.torch_op("cuda")
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            result = run()
            torch.cuda.synchronize()
            row["torch_buffers_mb"] = (torch.cuda.max_memory_allocated() - base) / 1e6
            row["diff"] = max((torch.as_tensor(case.writes[key], device="cuda").double().flatten()
                               - value.double().flatten()).abs().max().item()
                              for key, value in result.items())
            del result
            row["torch_ms"] = median_ms(run, runs, warmup, lambda: torch.cuda.Event(enable_timing=True))
            del run
            torch.cuda.empty_cache()
        row["ms"] = median_ms(case.launch, runs, warmup, cuda.event)
        row["gbps"] = row["mb"] / row["ms"]  # MB per ms = GB/s
        row["of_copy"] = row["gbps"] / copy_gbps
        rows.append(row)
    return rows


# ---------------------------------------------------------------- the markdown

def check_table(checks):
    cells = {}
    for r in checks:
        cell = (f"pass (max err {r['max_err']:.1e})" if r["ok"] else
                f"FAIL ({r['error'] or 'max err %.1e' % r['max_err']})")
        cells.setdefault(r["kernel"], {})[r["dtype"]] = cell
    lines = ["| kernel | float64 | float32 |", "|---|---|---|"]
    lines += [f"| {k} | {v.get('float64', '-')} | {v.get('float32', '-')} |" for k, v in cells.items()]
    return "\n".join(lines)


def gpu_markdown(device, runs, warmup, copy_gbps, rows, checks, torch):
    from numba import cuda
    import numba
    cc = ".".join(map(str, cuda.get_current_device().compute_capability))
    with_torch = torch is not None
    head = "| kernel | MB moved | ms | GB/s | of copy | GFLOP/s |"
    sep = "|---|---:|---:|---:|---:|---:|"
    if with_torch:
        head += " torch ms | torch ms / ours | max abs diff vs torch | MB allocated: ours / torch |"
        sep += "---:|---:|---:|---:|"
    lines = [head, sep]
    for r in rows:
        if "ms" not in r:  # a module the time budget left out
            lines.append(f"| {r['kernel']} |" + " |" * (sep.count("|") - 2))
            continue
        flops = f"{r['gflop'] / r['ms'] * 1e3:.0f}" if r["gflop"] else "-"
        line = (f"| {r['kernel']} | {r['mb']:.0f} | {r['ms']:.3f} | {r['gbps']:.0f} | "
                f"{r['of_copy']:.0%} | {flops} |")
        if with_torch:
            line += (f" {r['torch_ms']:.3f} | {r['torch_ms'] / r['ms']:.2f} | {r['diff']:.1e} | "
                     f"{r['buffers_mb']:.0f} / {r['torch_buffers_mb']:.0f} |")
        lines.append(line)
    torch_note = (f"torch {torch.__version__} (its own ops on the same GPU, TF32 off)" if with_torch
                  else "torch with CUDA not importable: no PyTorch columns")
    return f"""# Numba CUDA kernels on a GPU: the memory roofline and PyTorch
{MEASURED_MARK}

Measured {datetime.date.today()} on **{device}** (compute capability {cc}), numba {numba.__version__},
{torch_note}. fp32; each time is the median of {runs} CUDA-event-timed launches after {warmup}
warm-up launches, on device arrays made beforehand.
Roofline: a device-to-device copy runs at **{copy_gbps:.0f} GB/s** (read + write counted).

{chr(10).join(lines)}

MB moved is the bytes model: every input read once, every output written once. "of copy" is
the achieved GB/s over the copy's. Conv and linear are naive reference kernels (no tiling)
whose real traffic is far above the model; GFLOP/s is given for them. The atomic max-pool
backward includes zeroing dx. MB allocated: our outputs (the in-place cross-entropy writes
dlogits over the logits) against torch.cuda.max_memory_allocated above its inputs.

## Correctness on this GPU (tiny shapes, against the solution notebooks)

{check_table(checks)}

Command: `python benchmarks/kernels_gpu.py --runs {runs} --warmup {warmup}` (or `grade bench`).
"""


def no_gpu_markdown(reason, checks):
    machine = (f"{platform.node()}: {platform.machine()}, {os.cpu_count()} cores, "
               f"Python {platform.python_version()}")
    return f"""# Numba CUDA kernels on a GPU: the memory roofline and PyTorch

**No GPU measured yet: this file holds no timings and no bandwidth figures.**
Why: {reason}.
To measure, run `python3 benchmarks/gpu_session.py` (the kernel tests on the device, this
benchmark and compute-sanitizer, in under 10 minutes) or `python benchmarks/kernels_gpu.py`
(or `grade bench`) alone, on a machine with an NVIDIA GPU and its driver; with torch built
for CUDA it adds PyTorch's ops beside each kernel. Either replaces this file with the table.

## Simulator smoke pass

Every kernel the benchmark times, launched once on tiny shapes under the Numba CUDA
simulator (a child process with NUMBA_ENABLE_CUDASIM=1), in float64 and float32, checked
against the solution notebooks. It shows the benchmark's launches are right; it says
nothing about speed. Run {datetime.date.today()} on {machine}.

{check_table(checks)}
"""


def write(text, out, measured):
    out = Path(out)
    if not measured and out.exists() and MEASURED_MARK in out.read_text(encoding="utf-8"):
        print(f"kept {out}: it holds a GPU measurement and this run measured nothing")
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50, help="timed launches per kernel (median)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed launches first")
    parser.add_argument("--simulator", action="store_true",
                        help="time nothing: only the simulator smoke pass, even with a GPU")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the markdown goes")
    parser.add_argument("--only", default="", metavar="TEXT", help="time only the cases whose name holds TEXT")
    parser.add_argument("--questions", default=",".join(QUESTIONS), metavar="A,B",
                        help="the kernel modules whose cases run (kernels/cases/<name>.py); default: all")
    parser.add_argument("--max-seconds", type=float, default=0, metavar="S",
                        help="stop timing new kernel modules once S seconds have gone (0: no limit)")
    parser.add_argument("--check-only", action="store_true", help=argparse.SUPPRESS)  # the child
    args = parser.parse_args(argv)
    questions = tuple(q for q in args.questions.split(",") if q)
    unknown = sorted(set(questions) - set(QUESTIONS))
    if unknown:
        parser.error(f"no cases for {', '.join(unknown)}: choose from {', '.join(QUESTIONS)}")

    if args.check_only:
        checks = check_all("tiny", questions)  # kernels/device.py installs the simulator's fix on import
        print(json.dumps(checks))
        return 0 if all(r["ok"] for r in checks) else 1

    present, device = (False, "--simulator was given") if args.simulator else gpu_status()
    if present:
        print(f"GPU: {device}. Checking every kernel on tiny shapes, then timing.", flush=True)
        warnings.filterwarnings("ignore", message="Grid size")  # tiny checks under-fill the GPU
        checks = check_all("tiny", questions)
        torch = torch_cuda()
        copy_gbps = copy_bandwidth(1 << 30, args.runs, args.warmup)
        rows, started = [], time.monotonic()
        for question in questions:  # one module's arrays at a time
            if args.max_seconds and time.monotonic() - started > args.max_seconds:
                rows.append({"kernel": f"{question}: not timed (--max-seconds {args.max_seconds:g} spent)"})
                continue
            cases = [c for c in build_cases("large", np.float32, questions=(question,)) if args.only in c.name]
            rows += measure(cases, args.runs, args.warmup, copy_gbps, torch)
        text = gpu_markdown(device, args.runs, args.warmup, copy_gbps, rows, checks, torch)
    else:
        print(f"No GPU: {device}. Nothing is timed; running the simulator smoke pass instead.",
              flush=True)
        checks = smoke_in_child()
        text = no_gpu_markdown(device, checks)
    print(text)
    write(text, args.out, measured=present)
    return 0 if checks and all(r["ok"] for r in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
