"""A stand-in for compute-sanitizer where there is none (CI, `gpu_session.py --simulate`).

    python benchmarks/sanitizer_stand_in.py --tool racecheck --target-processes all \\
        --error-exitcode 86 python benchmarks/kernels_gpu.py --check-only ...

It takes the argv the GPU session gives compute-sanitizer, refuses options the session does not
use (so a planned argv that compute-sanitizer would not take fails here too, in one sentence),
runs the target command (under the simulator, which fails an out-of-bounds access as memcheck
would), and ends with one summary line in the place of compute-sanitizer's. It checks no race
and no memory access itself, so, as compute-sanitizer does when it finds no error, it exits
with the target's own status (--error-exitcode is taken and never used). It proves the step's
command, options and budget, not the kernels.
"""
from __future__ import annotations

import argparse
import subprocess
import sys

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")  # compute-sanitizer's four
SUMMARY = "========= STAND-IN SUMMARY"  # gpu_session.py reads this line as it reads the real summaries


def parse(argv):
    parser = argparse.ArgumentParser(prog="sanitizer_stand_in", description=__doc__.splitlines()[0],
                                     allow_abbrev=False)
    parser.add_argument("--tool", choices=TOOLS, default="memcheck")
    parser.add_argument("--target-processes", choices=("all", "application-only"), default="application-only")
    parser.add_argument("--error-exitcode", type=int, default=0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if not args.command or args.command[0].startswith("-"):
        parser.error(f"no target command after the options (got {args.command[:1]})")
    return args


def main(argv=None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    print(f"========= stand-in for compute-sanitizer --tool {args.tool}: running the target without a GPU",
          flush=True)
    code = subprocess.run(args.command).returncode
    print(f"{SUMMARY}: {args.tool} not run (no GPU); the target exited {code}", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
