"""One command for a GPU session: the kernel tests on the device, the benchmark, and
compute-sanitizer over the shared-memory kernels, planned to end within 8 minutes on one H200.

    python3 benchmarks/gpu_session.py [--wheels DIR] [--out PATH] [--skip tests,bench,sanitize]
                                      [--questions A,B] [--simulate]

From a plain copy of the repository (a clone or a `git archive`), on a machine with an NVIDIA
driver and a Python that has numba, numba-cuda, pytest, pytest-xdist, click and torch; nothing
of the kit is installed and nothing is downloaded. The kit imports from the copy itself: a
folder holding one link to backprop_traps/ goes first on PYTHONPATH, and backprop_traps/__init__.py
maps grader/ and kernels/ beside it (also when `python -m pytest` puts the copy's root first).
It prints its plan first, then runs each step in a process group of its own (session_steps.py),
stopped with everything it started at its budget, and rewrites the report after every step:
  0. preflight (budget 30 s): numpy within what the installed numba supports (one sentence, not
     a traceback, when not), the packages the steps need, the versions, a GPU;
  1. tests (140 s): BACKPROP_TRAPS_REAL_GPU=1 pytest tests/kernels -n 8, less the static compile
     (CI runs it), with the simulator-only tests skipping themselves;
  2. bench (144 s): benchmarks/kernels_gpu.py --runs 10 --warmup 2 --max-seconds 114 (counted
     from its start): tiny checks in float64 and float32, then every case at LARGE in fp32
     beside PyTorch's op, its table rewritten after each case;
  3. racecheck, memcheck (73 s each, sized to the compile: SANITIZED_CASES cases in float32):
     compute-sanitizer --error-exitcode 86 over the tiny cases of the kernel modules that use
     shared memory.
The report (--out; default benchmarks/results/kernels_gpu.md) is the benchmark's table, then this
session's summary (versions, each step's outcome, time and log). Beside it: one log per step,
<stem>.<step>.log, whole. Exit status 0 when every step passed, 2 when the machine cannot run it.

On the workplace's device machine (Python 3.12, numpy 2.5.2, which numba 0.68 refuses; no
network), carry a numpy wheel downloaded here and write where the run returns files:
    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \\
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d .whl 'numpy==2.4.6'
then, there (carry .whl): python3 benchmarks/gpu_session.py --wheels .whl --out $OUT/kernels_gpu.md
(the wheels are installed with pip --no-index --no-deps into a temporary folder, first on the path).

--simulate rehearses all of it without a GPU: the same steps on the Numba CUDA simulator at the
tiny sizes (kernels_gpu.py --simulate), the tests of the chosen modules only, and
sanitizer_stand_in.py in compute-sanitizer's place; the same report, saying it is a rehearsal.
"""
from __future__ import annotations

import argparse
import json
import math
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
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
from benchmarks import session_steps  # noqa: E402
from benchmarks.session_steps import Step  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "kernels_gpu.md"
PREFLIGHT_S = 30
# Questions with a kernel that uses shared memory (smem > 0 in benchmarks/results/kernels_static.md;
# tests/kernels/test_kernels_static.py keeps this list in step with the static compile). A version-2
# module counts as its question's; a module of kernels shared between questions, as the questions'
# whose cases launch them (SHARED_BY).
SHARED_MEMORY = ("adamw_step", "attention_backward", "batchnorm_backward", "bptt", "forward_vs_reverse",
                 "gradient_clinic", "layernorm_backward", "loss_scaling", "per_step_update_trap",
                 "reparameterisation", "residual_backward", "softmax_ce", "training_symptoms", "vram_trap",
                 "moe_router_backward", "rmsnorm_rope_backward")
SHARED_BY = {"tiled_matmul": ("forward_vs_reverse", "residual_backward", "training_symptoms", "moe_router_backward")}
# A sanitizer step compiles before it checks: the 175 kernels of these modules' 43 cases, in two
# dtypes, were put at 50-60 s on the H200 (issue 45's estimate: 0.64 s a case a dtype); issue 48
# brought back conv1d's and the JVP/VJP's version 1 (5 cases more); issue 49's questions 29
# and 30 add 6 (moe_router_backward's products, rmsnorm_rope_backward's row reductions); issue 48
# brought back the version 1 of adamw_step, loss_scaling, bptt and gradient_clinic (6 more).
# The steps check float32 alone, and get half as much again for the sanitizer's own start and
# instrumentation (tests/kernels/test_gpu_session.py keeps SANITIZED_CASES the cases' count):
SANITIZED_CASES, COMPILE_S_PER_CASE, SANITIZER_START_S = 60, 0.64, 15
SANITIZE_S = math.ceil(SANITIZER_START_S + 1.5 * COMPILE_S_PER_CASE * SANITIZED_CASES)
BUDGET = {"preflight": PREFLIGHT_S, "tests": 140, "bench": 144, "racecheck": SANITIZE_S, "memcheck": SANITIZE_S}
SESSION_S = 8 * 60  # the plan's ceiling: every budget, with room for the report
# The rehearsal: the simulator is one to two orders slower, and runs few modules.
SIMULATE_BUDGET = {"preflight": 120, "tests": 900, "bench": 600, "racecheck": 300, "memcheck": 300}
SIMULATE_QUESTIONS = ("adamw_step", "gradient_clinic")  # vector loads, warp shuffles, shared memory
ERROR_EXITCODE = 86  # compute-sanitizer's exit status when it finds an error (the kernels' own is 1)
BENCH_RESERVE_S = 30  # the benchmark stops starting modules this long before its budget


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


PROBE = """import importlib.metadata as md, importlib.util as iu, json, platform
out = {"python": platform.python_version(), "missing": []}
for name in ("pytest", "xdist", "click", "torch"):  # found, not imported: torch alone takes seconds
    if iu.find_spec(name) is None:
        out["missing"].append(name)
import numpy, numba
from backprop_traps.kernels.runtime.device import BACKEND, cuda
out.update(numpy=numpy.__version__, numba=numba.__version__, numba_cuda=md.version("numba-cuda"), backend=BACKEND,
           torch="none" if "torch" in out["missing"] else md.version("torch"))
gpu = BACKEND != "numba-cuda simulator" and cuda.is_available() and cuda.get_current_device().name
out["gpu"] = gpu.decode() if isinstance(gpu, bytes) else gpu
print(json.dumps(out))
"""


def preflight(env: dict, simulate: bool) -> tuple[list[str], dict]:
    """(the reasons this machine cannot run the session, empty when it can; what it found)."""
    mismatch = numpy_numba_mismatch()
    if mismatch:
        return [mismatch], {}
    try:
        done = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=BUDGET["preflight"] if not simulate else SIMULATE_BUDGET["preflight"])
    except subprocess.TimeoutExpired:
        return ["the preflight's probe (numba, the kit, the GPU) did not finish within its budget."], {}
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return [f"numba.cuda or the kit does not import here: {last}"], {}
    found = json.loads(done.stdout.strip().splitlines()[-1])
    needed = [m for m in found["missing"] if not (simulate and m == "torch")]
    reasons = [f"{m} is not installed here: the steps need it." for m in needed]
    if not simulate and not found["gpu"]:
        reasons.append("numba.cuda sees no GPU (no NVIDIA driver, or no device visible): nothing to measure "
                       "(--simulate rehearses the session without one).")
    return reasons, found


def describe(found: dict) -> str:
    if not found:
        return "the preflight found nothing"
    return (f"Python {found['python']}, numpy {found['numpy']}, numba {found['numba']}, numba-cuda "
            f"{found['numba_cuda']}, torch {found['torch']}; the kernels ran on {found['backend']}"
            f"{' (' + found['gpu'] + ')' if found.get('gpu') else ''}")


# ---------------------------------------------------------------- the kit, importable from the copy

def kit_site(base: Path) -> Path:
    """A folder whose only entry links to the copy's backprop_traps/ (which maps grader/ and
    kernels/ beside it): first on PYTHONPATH, it makes the kit the copy's own in every step,
    wherever a step's working folder is, without putting the copy's benchmarks/ on the path."""
    site = base / "site"
    site.mkdir(parents=True)
    (site / "backprop_traps").symlink_to(REPO / "backprop_traps", target_is_directory=True)
    return site


def install_wheels(wheels: Path, base: Path) -> Path:
    target = base / "wheels"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                           "--target", str(target), *map(str, sorted(wheels.glob("*.whl")))],
                          capture_output=True, text=True, timeout=300)
    if done.returncode:
        raise SystemExit(f"the wheels in {wheels} did not install: {done.stderr.strip().splitlines()[-1:]}")
    return target


def session_env(base: Path, wheels: Path | None = None, simulate: bool = False) -> dict:
    """Every step's environment: the kit from this copy (and the carried wheels) first on
    PYTHONPATH, the device chosen (BACKPROP_TRAPS_REAL_GPU=1, or the simulator)."""
    paths = [str(kit_site(base))]
    if wheels:
        paths.insert(0, str(install_wheels(wheels, base)))
        sys.path.insert(0, paths[0])  # the preflight reads the packages' metadata from this process's path
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM", "BACKPROP_TRAPS_REAL_GPU")}
    env.update(PYTHONPATH=os.pathsep.join(paths + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
               PYTHONUNBUFFERED="1")
    if simulate:
        env["NUMBA_ENABLE_CUDASIM"] = "1"  # the preflight's probe; the tests' conftest sets it too
    else:
        env["BACKPROP_TRAPS_REAL_GPU"] = "1"
    return env


def sanitizer() -> str | None:
    """compute-sanitizer on the PATH, or where the CUDA toolkit puts it."""
    return shutil.which("compute-sanitizer") or next(
        (p for p in ("/usr/local/cuda/bin/compute-sanitizer", "/usr/local/cuda/compute-sanitizer/compute-sanitizer")
         if os.access(p, os.X_OK)), None)


# ---------------------------------------------------------------- 1-3. the plan

def plan(skip: set, bench_out: Path, questions: tuple | None = None, simulate: bool = False,
         sanitizer_argv0: str = "compute-sanitizer") -> list[Step]:
    """The steps, each with its argv and budget. ``questions``: the kernel modules (None: all).
    The rehearsal's steps are the GPU's with three substitutions: the simulator's environment,
    the tiny sizes (``--simulate``) and the stand-in for compute-sanitizer."""
    py, budget = sys.executable, SIMULATE_BUDGET if simulate else BUDGET
    steps = []
    if "tests" not in skip:
        files = ["tests/kernels"] if questions is None else ["tests/kernels/test_patterns.py"] + [
            name for name in (f"tests/kernels/test_{q}_kernels.py" for q in questions) if (REPO / name).is_file()]
        steps.append(Step("tests", [py, "-m", "pytest", *files, "-q", "-p", "no:cacheprovider", "-n",
                                    "0" if simulate else "8", "--deselect", "tests/kernels/test_kernels_static.py"],
                          budget["tests"], what="the kernel tests" + (f" of {', '.join(questions)} and the shared "
                                                                      "patterns" if questions else "")))
    chosen = ["--questions", ",".join(questions)] if questions else []
    if "bench" not in skip:
        timing = ["--runs", "2", "--warmup", "1", "--simulate"] if simulate else ["--runs", "10", "--warmup", "2"]
        steps.append(Step("bench", [py, "benchmarks/kernels_gpu.py", *timing, "--max-seconds",
                                    str(budget["bench"] - BENCH_RESERVE_S), "--out", str(bench_out), *chosen],
                          budget["bench"], what="the benchmark: tiny checks, then every case timed"))
    sanitized = tuple(q for q in (questions or SHARED_MEMORY) if q in SHARED_MEMORY)
    if "sanitize" not in skip and sanitized:
        check = [py, "benchmarks/kernels_gpu.py", "--check-only", "--dtypes", "float32",
                 "--questions", ",".join(sanitized)]
        front = [py, str(REPO / "benchmarks" / "sanitizer_stand_in.py")] if simulate else [sanitizer_argv0]
        for tool in ("racecheck", "memcheck"):
            steps.append(Step(tool, [*front, "--tool", tool, "--target-processes", "all", "--error-exitcode",
                                     str(ERROR_EXITCODE), *check], budget[tool],
                              env={"NUMBA_ENABLE_CUDASIM": "1"} if simulate else {},
                              what=f"{'a stand-in for ' if simulate else ''}compute-sanitizer {tool} over the tiny "
                                   f"fp32 cases of {len(sanitized)} shared-memory modules"))
    return steps


def plan_text(steps: list[Step], simulate: bool) -> str:
    total = (SIMULATE_BUDGET if simulate else BUDGET)["preflight"] + sum(s.budget for s in steps)
    lines = [f"  {'preflight':<10}{(SIMULATE_BUDGET if simulate else BUDGET)['preflight']:>5} s  versions, packages, "
             f"{'the simulator' if simulate else 'a GPU'}"]
    lines += [f"  {s.name:<10}{s.budget:>5} s  {s.what}" for s in steps]
    head = "Rehearsal on the simulator (--simulate)" if simulate else "GPU session"
    return (f"{head}: the plan, each step stopped at its budget with everything it started\n" + "\n".join(lines)
            + f"\n  at most {total} s ({total / 60:.1f} min) in all")


# ---------------------------------------------------------------- the report

def summary(outcome) -> str:
    """One cell: what a step found, from its output."""
    out = outcome.output
    if outcome.code is None:
        return f"stopped at its budget ({outcome.budget} s)"
    if outcome.name == "tests":
        counts = re.findall(r"^=*\s*((?:\d+ (?:passed|failed|skipped|deselected|errors?|xfailed|xpassed)[, ]*)+)"
                            r".*? in [\d.]+s", out, re.M)
        failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", out, re.M)
        return ((counts[-1].strip(", ") if counts else f"exit {outcome.code}: "
                 + (out.strip().splitlines() or [""])[-1][:200])
                + (f"; failed: {', '.join(failed[:8])}" if failed else ""))
    if outcome.name == "bench":
        return "every check and case passed" if outcome.code == 0 else \
            f"exit {outcome.code}: a check or a case failed (see the table above and its log)"
    found = re.findall(r"(?:RACECHECK SUMMARY|ERROR SUMMARY|STAND-IN SUMMARY):[^\n]*", out)
    lead = "hazards or errors found: " if outcome.code == ERROR_EXITCODE else ""
    return lead + ("; ".join(found[-2:]) or f"exit {outcome.code}: " + (out.strip().splitlines() or [""])[-1][:200])


def report(outcomes: list, bench_out: Path, found: dict, steps: list[Step], simulate: bool, done: bool) -> str:
    table = bench_out.read_text(encoding="utf-8") if bench_out.is_file() else \
        "# Numba CUDA kernels on a GPU\n\nThe benchmark did not write its table in this session.\n"
    rows = "\n".join(f"| {o.name} | {o.budget} s | {o.seconds:.0f} s | {summary(o)} | {o.log.name} |"
                     for o in outcomes)
    left = [s.name for s in steps[len(outcomes):]]
    progress = "" if done else f"\n**Session in progress: {', '.join(left) or 'the report'} still to run.**\n"
    kind = "rehearsed on the Numba CUDA simulator (`--simulate`: no measurement)" if simulate else "on a GPU"
    return f"""{table.rstrip()}

## GPU session (benchmarks/gpu_session.py), {kind}

Run {time.strftime('%Y-%m-%d %H:%M')} on {platform.node()}: {describe(found)}.
{progress}
| step | budget | took | result | log |
|---|---:|---:|---|---|
{rows}

{plan_text(steps, simulate).replace(chr(10) + '  ', chr(10) + '    ')}
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=Path, help="a folder of wheels to put first on the path (no network)")
    parser.add_argument("--out", type=Path, help="where the report goes [benchmarks/results/kernels_gpu.md; "
                                                  "with --simulate, gpu_session_simulated.md in the temporary folder]")
    parser.add_argument("--skip", default="", help="comma-separated steps to leave out: tests, bench, sanitize")
    parser.add_argument("--questions", default=None, metavar="A,B",
                        help=f"only these kernel modules [all; with --simulate, {','.join(SIMULATE_QUESTIONS)}]")
    parser.add_argument("--simulate", action="store_true", help="rehearse every step on the simulator, no GPU")
    args = parser.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    questions = tuple(filter(None, args.questions.split(","))) if args.questions else \
        (SIMULATE_QUESTIONS if args.simulate else None)
    unknown = [q for q in questions or () if not (REPO / "kernels" / "cases" / f"{q}.py").is_file()]
    if unknown:
        parser.error(f"no kernel cases for {', '.join(unknown)} (kernels/cases/<name>.py names them)")
    out = args.out or (Path(tempfile.gettempdir()) / "gpu_session_simulated.md" if args.simulate else RESULTS)
    bench_out = out.with_name(f"{out.stem}.bench.md")
    session_steps.stop_on_signals()
    with tempfile.TemporaryDirectory(prefix="gpu-session-") as tmp:
        env = session_env(Path(tmp), args.wheels, args.simulate)
        tool = None if args.simulate else sanitizer()
        no_sanitizer = not args.simulate and "sanitize" not in skip and tool is None
        steps = plan(skip | ({"sanitize"} if no_sanitizer else set()), bench_out, questions, args.simulate,
                     tool or "compute-sanitizer")
        print(plan_text(steps, args.simulate), flush=True)
        if no_sanitizer:
            print("compute-sanitizer is not on the PATH or in /usr/local/cuda: the sanitize steps are left out.")
        reasons, found = preflight(env, args.simulate)
        if reasons:
            print("This machine cannot run the GPU session: " + " ".join(reasons))
            return 2
        print(f"preflight: {describe(found)}", flush=True)
        bench_out.unlink(missing_ok=True)  # a table from an earlier session is not this one's
        outcomes = []
        for step in steps:
            outcomes.append(session_steps.run(step, REPO, env, out.with_name(f"{out.stem}.{step.name}.log")))
            last = outcomes[-1]
            print(f"{step.name}: {'stopped at its budget' if last.code is None else f'exit {last.code}'} after "
                  f"{last.seconds:.0f} s: {summary(last)}", flush=True)
            _write(out, report(outcomes, bench_out, found, steps, args.simulate, done=False))
        _write(out, report(outcomes, bench_out, found, steps, args.simulate, done=True))
        bench_out.unlink(missing_ok=True)  # folded into the report
        print(f"wrote {out} (each step's log beside it)")
    return 0 if all(o.code == 0 for o in outcomes) else 1


def _write(out: Path, text: str) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(out)


if __name__ == "__main__":
    sys.exit(main())
