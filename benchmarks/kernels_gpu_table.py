"""The markdown of benchmarks/kernels_gpu.py: the timing table (measured on a GPU, or a
simulator rehearsal that shows no times), the correctness table, the no-GPU smoke file, and
the write that never replaces a GPU measurement with a run that measured nothing."""
from __future__ import annotations

import datetime
import os
import platform
from pathlib import Path

MEASURED_MARK = "<!-- measured on a GPU -->"


def check_table(checks):
    cells = {}
    for r in checks:
        cell = (f"pass (max err {r['max_err']:.1e})" if r["ok"] else
                f"FAIL ({r['error'] or 'max err %.1e' % r['max_err']})")
        cells.setdefault(r["kernel"], {})[r["dtype"]] = cell
    lines = ["| kernel | float64 | float32 |", "|---|---|---|"]
    lines += [f"| {k} | {v.get('float64', '-')} | {v.get('float32', '-')} |" for k, v in cells.items()]
    return "\n".join(lines)


def timing_cells(r, with_torch, simulated):
    """A timed row's cells after the kernel's name: measured numbers, or (simulated) none."""
    if "error" in r:
        return [f"FAILED: {r['error']}"] + [""] * (4 + 4 * with_torch)
    if simulated:  # the simulator's times say nothing about a GPU: the row shows that it ran
        return [f"{r['mb']:.3f}"] + ["sim."] * (4 + 4 * with_torch)
    cells = [f"{r['mb']:.0f}", f"{r['ms']:.3f}", f"{r['gbps']:.0f}", f"{r['of_copy']:.0%}",
             f"{r['gflop'] / r['ms'] * 1e3:.0f}" if r["gflop"] else "-"]
    if with_torch and "torch_error" in r:
        cells += [f"torch failed: {r['torch_error']}", "", "", ""]
    elif with_torch:
        cells += [f"{r['torch_ms']:.3f}", f"{r['torch_ms'] / r['ms']:.2f}", f"{r['diff']:.1e}",
                  f"{r['buffers_mb']:.0f} / {r['torch_buffers_mb']:.0f}"]
    return cells


def gpu_markdown(device, runs, warmup, copy_gbps, rows, checks, torch, simulated=False, pending=(), at=0.0):
    """The table; ``pending``: the kernel modules still to time ``at`` seconds into the run (the
    file is rewritten as it goes)."""
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
        if "mb" not in r:  # a module the time budget left out, or whose cases were not built
            lines.append(f"| {r['kernel']} |" + " |" * (sep.count("|") - 2))
            continue
        lines.append("| " + " | ".join([r["kernel"], *timing_cells(r, with_torch, simulated)]) + " |")
    torch_note = (f"torch {torch.__version__} (its own ops on the same GPU, TF32 off)" if with_torch
                  else "torch with CUDA not importable: no PyTorch columns")
    progress = (f"\n**Timing in progress at {at:.0f} s: {len(pending)} kernel modules still to time "
                f"({', '.join(pending)}).** A file that still says so was cut short.\n" if pending else "")
    if simulated:
        title = "# Numba CUDA kernels on the SIMULATOR (a rehearsal of the GPU run: no measurement)"
        where = (f"Rehearsed {datetime.date.today()} on the Numba CUDA simulator (`--simulate`), numba "
                 f"{numba.__version__}, at the TINY sizes: every step of the GPU run ran, and no time, bandwidth "
                 f"or speed here is a measurement (the cells say `sim.`).")
        mark = ""
    else:
        title = "# Numba CUDA kernels on a GPU: the memory roofline and PyTorch"
        where = (f"Measured {datetime.date.today()} on **{device}** (compute capability {cc}), numba "
                 f"{numba.__version__},\n{torch_note}. fp32; each time is the median of {runs} CUDA-event-timed "
                 f"launches after {warmup}\nwarm-up launches, on device arrays made beforehand.\nRoofline: a "
                 f"device-to-device copy runs at **{copy_gbps:.0f} GB/s** (read + write counted).")
        mark = MEASURED_MARK
    flag = " --simulate" if simulated else ""
    return f"""{title}
{mark}
{where}
{progress}
{chr(10).join(lines)}

MB moved is the bytes model: every input read once, every output written once. "of copy" is
the achieved GB/s over the copy's. Conv and linear are naive reference kernels (no tiling)
whose real traffic is far above the model; GFLOP/s is given for them. The atomic max-pool
backward includes zeroing dx. MB allocated: our outputs (the in-place cross-entropy writes
dlogits over the logits) against torch.cuda.max_memory_allocated above its inputs.

## Correctness on this {'simulator' if simulated else 'GPU'} (tiny shapes, against the solution notebooks)

{check_table(checks)}

Command: `python benchmarks/kernels_gpu.py --runs {runs} --warmup {warmup}{flag}` (or `grade bench`).
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


def write(text, out, measured, quiet=False):
    out = Path(out)
    if not measured and out.exists() and MEASURED_MARK in out.read_text(encoding="utf-8"):
        print(f"kept {out}: it holds a GPU measurement and this run measured nothing")
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(out)  # whole or not at all: a run stopped mid-write leaves the last table
    if not quiet:
        print(f"wrote {out}")
