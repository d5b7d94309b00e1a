"""One command for a GPU session: the kernel tests on the device, the benchmark, and
compute-sanitizer over the shared-memory kernels, in well under 10 minutes.

    python3 benchmarks/gpu_session.py [--wheels DIR] [--out PATH] [--skip tests,bench,sanitize]

From a clean clone, on a machine with an NVIDIA driver and a Python that has numba,
numba-cuda and torch built for CUDA; nothing is installed and nothing is downloaded. The kit
is made importable from the clone itself (links in a temporary folder put on PYTHONPATH).
  0. preflight (seconds): numpy within what the installed numba supports (numba 0.68.0 refuses
     numpy 2.5: one sentence says so, not a traceback), the packages the steps need, a GPU;
  1. tests (budget 180 s): BACKPROP_TRAPS_REAL_GPU=1 pytest tests/kernels, less the static
     compile (CI runs it) and with the simulator-only tests skipping themselves;
  2. bench (budget 200 s): benchmarks/kernels_gpu.py --runs 10 --warmup 2, timing stopped after
     120 s (kernel modules left untimed are listed as such): tiny checks in float64 and
     float32, then every case at LARGE in fp32 beside PyTorch's op;
  3. sanitize (budget 2 x 45 s): compute-sanitizer --tool racecheck, then --tool memcheck, over
     the tiny cases of the kernel modules that use shared memory (SHARED_MEMORY).
It writes benchmarks/results/kernels_gpu.md: the benchmark's table, then this session's
summary (versions, each step's outcome and time). A step that runs past its budget is stopped
and reported as such; the others still run. Exit status 0 when every step passed.

No network on the machine (the workplace's device machine: Python 3.12 with numpy 2.5.2,
numba, numba-cuda, torch 2.11 cu130)? Carry the wheels it lacks, downloaded here:
    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \\
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d .whl 'numpy==2.4.6'
(numba 0.68.0 needs numpy < 2.5; add numba-cuda-mlir and its cu13 wheels to try
BACKPROP_TRAPS_CUDA=mlir), then there: python3 benchmarks/gpu_session.py --wheels .whl
(they are installed with pip --no-index --no-deps into a temporary folder, first on the path).
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results" / "kernels_gpu.md"
BUDGET = {"tests": 180, "bench": 200, "racecheck": 45, "memcheck": 45}  # seconds: 470 in all
BENCH_ARGS = ["--runs", "10", "--warmup", "2", "--max-seconds", "120"]
# Questions with a kernel that uses shared memory (smem > 0 in benchmarks/results/kernels_static.md;
# tests/kernels/test_kernels_static.py keeps this list in step with the static compile). A version-2
# module counts as its question's; a module of kernels shared between questions, as the questions'
# whose cases launch them (SHARED_BY).
SHARED_MEMORY = ("adamw_step", "attention_backward", "batchnorm_backward", "bptt", "forward_vs_reverse",
                 "gradient_clinic", "layernorm_backward", "loss_scaling", "per_step_update_trap",
                 "reparameterisation", "residual_backward", "softmax_ce", "training_symptoms", "vram_trap")
SHARED_BY = {"tiled_matmul": ("forward_vs_reverse", "residual_backward", "training_symptoms")}


# ---------------------------------------------------------------- 0. preflight, before numpy loads

def _release(version: str) -> tuple:
    return tuple(int(p) for p in re.findall(r"\d+", version.split("+")[0])[:3])


def _satisfies(version: str, spec: str) -> bool:
    """Whether ``version`` meets a requirement's specifiers, such as ``<2.5,>=1.24``."""
    have = _release(version)
    ops = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
           ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        op, bound = re.match(r"(<=|>=|==|!=|<|>)\s*([\w.*]+)", clause).groups()
        want = _release(bound.replace("*", "0"))
        width = max(len(have), len(want))
        if not ops[op](have + (0,) * (width - len(have)), want + (0,) * (width - len(want))):
            return False
    return True


def numpy_numba_mismatch(version=None, requires=None) -> str | None:
    """One sentence when the installed numpy is outside what the installed numba declares."""
    from importlib import metadata
    version = version or metadata.version
    requires = requires or metadata.requires
    try:
        numpy_v, numba_v = version("numpy"), version("numba")
    except metadata.PackageNotFoundError as exc:
        return f"{exc.args[0]} is not installed: this session needs numpy, numba and numba-cuda."
    for requirement in requires("numba") or []:
        match = re.match(r"numpy\s*([^;]*)", requirement)
        if match and match.group(1).strip() and not _satisfies(numpy_v, match.group(1)):
            return (f"numba {numba_v} supports numpy {match.group(1).strip()}, but numpy {numpy_v} is "
                    f"installed, so numba cannot be imported: carry a numpy wheel it supports "
                    f"(see this script's docstring) and pass --wheels.")
    return None


def preflight(env: dict) -> list[str]:
    """The reasons this machine cannot run the session (empty when it can)."""
    reasons = []
    mismatch = numpy_numba_mismatch()
    if mismatch:
        return [mismatch]
    probe = ("import numba, numba.cuda, numpy; from numba import cuda; "
             "print(cuda.is_available() and cuda.get_current_device().name)")
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        reasons.append(f"numba.cuda does not import here: {last}")
    elif done.stdout.strip() in ("False", ""):
        reasons.append("numba.cuda sees no GPU (no NVIDIA driver, or no device visible): nothing to measure.")
    for module in ("torch", "pytest", "xdist", "click"):
        found = subprocess.run([sys.executable, "-c", f"import {module}"], env=env, capture_output=True, timeout=120)
        if found.returncode:
            reasons.append(f"{module} does not import here: the {'benchmark' if module == 'torch' else 'tests'} need it.")
    return reasons


# ---------------------------------------------------------------- the kit, importable from the clone

def kit_site(base: Path) -> Path:
    """A folder that makes ``backprop_traps`` the clone's own: links to grader/ and kernels/."""
    site = base / "site"
    package = site / "backprop_traps"
    package.mkdir(parents=True)
    for name in ("__init__.py", "old_names.py"):
        (package / name).symlink_to(REPO / "backprop_traps" / name)
    (package / "grader").symlink_to(REPO / "grader")
    (package / "kernels").symlink_to(REPO / "kernels")
    return site


def install_wheels(wheels: Path, base: Path) -> Path:
    target = base / "wheels"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                           "--target", str(target), *map(str, sorted(wheels.glob("*.whl")))],
                          capture_output=True, text=True, timeout=300)
    if done.returncode:
        raise SystemExit(f"the wheels in {wheels} did not install: {done.stderr.strip().splitlines()[-1:]}")
    return target


# ---------------------------------------------------------------- 1-3. the steps, each within its budget

def run_step(name: str, argv: list[str], env: dict, budget: int) -> dict:
    start = time.monotonic()
    try:
        done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=budget)
        out, code = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace") + (exc.stderr or b"").decode(errors="replace")
        code = None
    step = {"name": name, "seconds": time.monotonic() - start, "code": code, "output": out}
    print(f"{name}: {'stopped at its budget' if code is None else f'exit {code}'} "
          f"after {step['seconds']:.0f} s", flush=True)
    return step


def steps(skip: set, bench_out: Path) -> list[tuple[str, list[str], int]]:
    py = sys.executable
    plan = []
    if "tests" not in skip:
        plan.append(("tests", [py, "-m", "pytest", "tests/kernels", "-q", "-p", "no:cacheprovider", "-n", "8",
                               "--deselect", "tests/kernels/test_kernels_static.py"], BUDGET["tests"]))
    if "bench" not in skip:
        plan.append(("bench", [py, "benchmarks/kernels_gpu.py", *BENCH_ARGS, "--out", str(bench_out)], BUDGET["bench"]))
    if "sanitize" not in skip:
        check = [py, "benchmarks/kernels_gpu.py", "--check-only", "--questions", ",".join(SHARED_MEMORY)]
        for tool in ("racecheck", "memcheck"):
            plan.append((tool, ["compute-sanitizer", "--tool", tool, "--target-processes", "all", *check],
                         BUDGET[tool]))
    return plan


def summary(step: dict) -> str:
    """One cell: what a step found, from its output."""
    out = step["output"]
    if step["code"] is None:
        return f"stopped at its budget ({BUDGET[step['name']]} s)"
    if step["name"] == "tests":
        counts = re.findall(r"^=*\s*(\d+ (?:passed|failed|skipped|error).*?) in [\d.]+s", out, re.M)
        failed = re.findall(r"^FAILED (\S+)", out, re.M)
        return (counts[-1] if counts else f"exit {step['code']}") + (f"; failed: {', '.join(failed[:8])}" if failed else "")
    if step["name"] == "bench":
        return "every tiny check passed" if step["code"] == 0 else "a tiny check failed (see the table below)"
    found = re.findall(r"(?:RACECHECK SUMMARY|ERROR SUMMARY):[^\n]*", out)
    return "; ".join(found[-2:]) or (f"exit {step['code']}: " + (out.strip().splitlines() or [""])[-1][:200])


def versions(env: dict) -> str:
    code = ("import importlib.metadata as md, platform, numpy, numba\n"
            "from backprop_traps.kernels.device import BACKEND\n"
            "try: t = __import__('torch').__version__\nexcept Exception: t = 'none'\n"
            "print(f'Python {platform.python_version()}, numpy {numpy.__version__}, numba {numba.__version__}, '"
            "f'numba-cuda {md.version(\"numba-cuda\")}, torch {t}; the kernels ran on {BACKEND}')")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    smi = shutil.which("nvidia-smi")
    gpu = subprocess.run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True,
                         text=True, timeout=60).stdout.strip() if smi else "nvidia-smi not found"
    return f"{done.stdout.strip() or done.stderr.strip()[-200:]}; GPU {gpu}"


def report(results: list[dict], bench_out: Path, env: dict) -> str:
    table = bench_out.read_text(encoding="utf-8") if bench_out.is_file() else \
        "# Numba CUDA kernels on a GPU\n\nThe benchmark did not write its table in this session.\n"
    rows = "\n".join(f"| {r['name']} | {BUDGET[r['name']]} s | {r['seconds']:.0f} s | {summary(r)} |" for r in results)
    return f"""{table.rstrip()}

## GPU session (benchmarks/gpu_session.py)

Run {time.strftime('%Y-%m-%d')} on {platform.node()}: {versions(env)}.

| step | budget | took | result |
|---|---:|---:|---|
{rows}

Steps: the kernel tests on the device (`BACKPROP_TRAPS_REAL_GPU=1 pytest tests/kernels`, less the static
compile); the benchmark (`benchmarks/kernels_gpu.py {' '.join(BENCH_ARGS)}`); compute-sanitizer's racecheck
and memcheck over the tiny cases of {', '.join(SHARED_MEMORY)}.
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=Path, help="a folder of wheels to put first on the path (no network)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the markdown goes")
    parser.add_argument("--skip", default="", help="comma-separated steps to leave out: tests, bench, sanitize")
    args = parser.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    with tempfile.TemporaryDirectory(prefix="gpu-session-") as tmp:
        base = Path(tmp)
        paths = [str(kit_site(base)), str(REPO)]
        if args.wheels:
            paths.insert(0, str(install_wheels(args.wheels, base)))
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
        env.update(PYTHONPATH=os.pathsep.join(paths + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
                   BACKPROP_TRAPS_REAL_GPU="1", PYTHONUNBUFFERED="1")
        if args.wheels:  # the preflight reads the packages' metadata from this process's path
            sys.path.insert(0, paths[0])
        reasons = preflight(env)
        if reasons:
            print("This machine cannot run the GPU session: " + " ".join(reasons))
            return 2
        if "sanitize" not in skip and not shutil.which("compute-sanitizer"):
            print("compute-sanitizer is not on the PATH: the sanitize step is left out.")
            skip.add("sanitize")
        bench_out = base / "kernels_gpu.md"
        results = [run_step(name, command, env, budget) for name, command, budget in steps(skip, bench_out)]
        text = report(results, bench_out, env)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")
    return 0 if all(r["code"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
