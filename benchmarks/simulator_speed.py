"""Benchmark: how the simulator's switch interval and the race checker set the kernel tests' speed.

Run: python benchmarks/simulator_speed.py [--intervals 1e-4 1e-3 5e-3]
Each row is a fresh process (the interval is process-wide) that runs question 21's version-2
gradient norms (residual_backward.gradient_norms, 2 blocks: tiled 256-thread products and the
two-stage norms: the kind of launch that dominates tests/kernels) under the Numba CUDA
simulator at one switch interval, with the race checker (as every kernel test runs) and, at
kernels/simulator_fixes.SWITCH_INTERVAL, without it. Writes
benchmarks/results/simulator_speed.md with the machine and its load.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUN = """
import json, os, sys, time
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
import numpy as np
from backprop_traps.grader.sandbox import race_checker
from backprop_traps.kernels import residual_backward as k  # installs the simulator's fixes
sys.setswitchinterval(float(sys.argv[1]))
checked = sys.argv[2] == "1"
if checked:
    race_checker.install()
rng = np.random.default_rng(4)
L, N, D, H = 2, 3, 4, 3
x, dout = rng.standard_normal((N, D)), rng.standard_normal((N, D))
weights = [(rng.standard_normal((D, H)), rng.standard_normal((H, D))) for _ in range(L)]
wall, cpu = time.perf_counter(), time.process_time()
with race_checker.checking() as log:
    k.gradient_norms(dout, x, weights, 2)
print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "accesses": log.accesses}))
"""


def run(interval: float, checked: bool) -> dict:
    done = subprocess.run([sys.executable, "-c", RUN, repr(interval), "1" if checked else "0"], cwd=REPO,
                          capture_output=True, text=True, timeout=900, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    from backprop_traps.kernels.runtime.simulator_fixes import SWITCH_INTERVAL
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--intervals", type=float, nargs="+", default=[1e-4, SWITCH_INTERVAL, 5e-3])
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "simulator_speed.md")
    args = parser.parse_args()
    rows = [(i, True, run(i, True)) for i in args.intervals] + [(SWITCH_INTERVAL, False, run(SWITCH_INTERVAL, False))]
    lines = [
        "# The simulator's speed: switch interval and race checker",
        "",
        f"Measured {datetime.date.today()} on {platform.node()}: {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; load average {', '.join(f'{x:.1f}' for x in os.getloadavg())} at the end.",
        "`python benchmarks/simulator_speed.py`: question 21's version-2 gradient norms (2 blocks) under the",
        "simulator, one fresh process a row.",
        "",
        "| switch interval | race checker | wall (s) | CPU (s) | accesses logged |",
        "|---|---|---:|---:|---:|",
    ]
    for interval, checked, r in rows:
        mark = " (the kit's)" if interval == SWITCH_INTERVAL else ""
        lines.append(f"| {interval * 1e3:g} ms{mark} | {'on' if checked else 'off'} | {r['wall']:.1f} | {r['cpu']:.1f} "
                     f"| {r['accesses'] if checked else '-'} |")
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
