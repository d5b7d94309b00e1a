"""Benchmark: glibc's heap thresholds against the attention solution's measured calls.

Run: python benchmarks/heap_thresholds.py [--runs 5]
The sandbox's worker fixes glibc's mmap and trim thresholds while a call is measured
(grader/sandbox/worker.py, ``steady_heap``), so that the peak the grader reads tracks live
memory. This times what each setting costs: the attention_backward solution's four calls
(forward and backward, causal and not) at the memory checks' size and at 4096, each setting
in a fresh Python (mallopt first, then numpy), median of ``--runs`` runs after a warm-up.
Prints a markdown table and writes it to benchmarks/results/heap_thresholds.md.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SETTINGS = [  # (name, mmap threshold, trim threshold); 0: glibc's own (dynamic) choice
    ("glibc's default (dynamic)", 0, 0),
    ("128 KiB mmap, trim pinned at 128 KiB (the kit before)", 128 << 10, 0),
    ("256 KiB / 512 KiB (measured calls now)", 256 << 10, 512 << 10),
    ("4 MiB / 8 MiB (between measured calls now)", 4 << 20, 8 << 20),
]

CHILD = r"""
import ctypes, statistics, sys, time
mmap, trim, n, runs = (int(a) for a in sys.argv[1:5])
libc = ctypes.CDLL(None)
if mmap:
    libc.mallopt(-3, mmap)
if trim:
    libc.mallopt(-1, trim)
import numpy as np
from backprop_traps.grader.loading.reference import load_solution
ref = load_solution("attention_backward")
rng = np.random.default_rng(0)
q, k, v, do = (rng.standard_normal((1, n, 32)) for _ in range(4))

def four():
    start = time.perf_counter()
    for causal in (False, True):
        o, lse = ref.attention_forward(q, k, v, causal)
        ref.attention_backward(do, q, k, v, o, lse, causal)
    return time.perf_counter() - start

four()  # warm-up
print(statistics.median(four() for _ in range(runs)))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "heap_thresholds.md"))
    args = parser.parse_args()
    from backprop_traps.grader.checks.attention_backward.probes import MEM_N
    sizes = sorted({MEM_N, 4096})
    rows = []
    for name, mmap, trim in SETTINGS:
        times = [float(subprocess.run([sys.executable, "-c", CHILD, str(mmap), str(trim), str(n), str(args.runs)],
                                      capture_output=True, text=True, check=True).stdout) for n in sizes]
        rows.append((name, times))
    base = rows[0][1]
    header = " | ".join(f"N = {n} (s) | vs default" for n in sizes)
    table = "\n".join([f"| setting | {header} |", "|---" * (1 + 2 * len(sizes)) + "|"]
                      + [f"| {name} | " + " | ".join(f"{t:.3f} | {t / b:.2f}x" for t, b in zip(times, base)) + " |"
                         for name, times in rows])
    machine = (f"{platform.node() or 'unknown host'}: {platform.machine()}, {os.cpu_count()} cores, "
               f"Python {platform.python_version()}, {platform.platform()}")
    report = (f"# Heap thresholds against attention_backward's four measured calls\n\n"
              f"Measured {datetime.date.today()} on {machine}.\n"
              f"Command: `python benchmarks/heap_thresholds.py --runs {args.runs}`. The solution's forward and\n"
              f"backward, causal and not, B = 1, d = 32, in one process per setting (no sandbox); median of\n"
              f"{args.runs} after a warm-up. N = {MEM_N} is the memory checks' size.\n\n{table}\n")
    print(report)
    Path(args.out).write_text(report)


if __name__ == "__main__":
    main()
