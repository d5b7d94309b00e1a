"""Static compile of every kernel for real GPUs, on a machine without one.

Run: python benchmarks/kernels_static.py [--json] [--out PATH] [--cache DIR]
Prints one row per (kernel, dtype, target): registers per thread, local-memory spills,
shared memory, the float64 instructions in its PTX, and what the PTX says about memory
(benchmarks/ptx_stats.py: global loads and stores, in loops or not, their widths, 64-bit
integer division, local-memory instructions); then each kernel's predicted speed
(benchmarks/speed_prediction.py, from the PTX and benchmarks/simulated_facts.py). Exits 1
when a kernel fails to compile, spills, runs float64 arithmetic in a float32 launch, needs
more registers than REGISTER_BOUND, or more than a block may have (48 KiB of static shared
memory; 65,536 registers for its threads). With --out it writes the markdown
(benchmarks/results/kernels_static.md).

How, without a GPU:
  1. Which kernels, with which argument types: the benchmark's TINY cases (kernels/cases/)
     are launched with numpy arrays standing in for device arrays, and each launch is only
     recorded (the Numba type of each argument), never run. Factory-made kernels (one per
     block size and dtype) are covered as the cases launch them.
  2. NVVM (libnvvm, from PyPI's nvidia-nvvm wheel) turns each into PTX for sm_80 and sm_90,
     with numba-cuda's own compile_ptx and the kernel's own options.
  3. nvJitLink (nvidia-nvjitlink) assembles the PTX to machine code for the same target and
     reports what ptxas reports: registers, spill stores and loads, shared memory.
No driver, no device: what only a GPU can tell (time, bank conflicts, coalescing) is not here.
Skips (exit 0, says why) where numba-cuda cannot find NVVM, NVRTC or nvJitLink.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: make `backprop_traps` and `benchmarks` importable
    sys.path.insert(0, str(REPO))

from benchmarks import ptx_stats, speed_prediction  # noqa: E402
from benchmarks.simulated_facts import kernel_key  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "kernels_static.md"
TARGETS = ((8, 0), (9, 0))
DTYPES = ("float32", "float64")
REGISTER_BOUND = 128
"""Per thread: 128 keeps two 256-thread blocks resident per SM (64K registers) on sm_80/sm_90."""
MAX_SHARED_BYTES, REGISTERS_PER_SM = 48 * 1024, 65_536  # what one block may have: kernels/runtime/launch_limits.py


# ---------------------------------------------------------------- 1. record the launches

class _StandIn:
    """Numpy arrays in place of device arrays: allocation, copies and memset do nothing on a GPU."""

    @staticmethod
    def install():
        import numpy as np
        from numba import cuda
        from numba.cuda.cudadrv import driver

        class HostArray(np.ndarray):
            def copy_to_host(self, ary=None, stream=0):
                return np.array(self)

            def copy_to_device(self, ary, stream=0):
                self[...] = ary

        def to_device(obj, stream=0, copy=True, to=None):
            return np.array(obj, copy=True).view(HostArray)

        def device_array(shape, dtype=np.float64, strides=None, order="C", stream=0):
            return np.zeros(shape, dtype=dtype, order=order).view(HostArray)

        cuda.to_device, cuda.device_array = to_device, device_array
        cuda.device_array_like = lambda ary, stream=0: device_array(ary.shape, ary.dtype)
        driver.device_memset = lambda dst, val, size, stream=0: None
        return HostArray


def record_launches() -> list[dict]:
    """Every distinct (kernel, argument types) the TINY cases launch, in both dtypes."""
    import numpy as np
    from numba.cuda import dispatcher as cuda_dispatcher

    _StandIn.install()
    seen: dict = {}

    def call(self, args, launch_config):  # record instead of launching
        argtypes = tuple(self.typeof_pyval(a) for a in args)
        key = (id(self), argtypes)
        if key not in seen:
            seen[key] = {"dispatcher": self, "argtypes": argtypes,
                         "block": tuple(int(b) for b in launch_config.blockdim)}

    cuda_dispatcher.CUDADispatcher.call = call
    cuda_dispatcher._LaunchConfiguration.__init__ = _plain_launch_config
    from backprop_traps.kernels.cases import build_cases
    for dtype in DTYPES:
        for case in build_cases("tiny", np.dtype(dtype)):
            case.launch()
    launches = list(seen.values()) + large_variants(seen.values())
    for entry in launches:
        entry["dtype"] = launch_dtype(entry["argtypes"])
        entry.setdefault("kernel", kernel_key(entry["dispatcher"].py_func))
    return sorted(launches, key=lambda e: (e["kernel"], e["dtype"]))


def launch_dtype(argtypes) -> str:
    """"float64" when any float argument (array or scalar) is float64, else "float32"."""
    from numba.core import types
    floats = {getattr(a, "dtype", a) for a in argtypes}
    return "float64" if types.float64 in floats else "float32"


def large_variants(recorded) -> list[dict]:
    """Kernels whose code depends on LARGE's sizes (a cases file's ``large_kernels(dtype)``),
    with the argument types their TINY launch recorded."""
    import numpy as np
    from backprop_traps.kernels import cases
    by_name = {(e["dispatcher"].py_func.__name__, e["argtypes"]): e for e in recorded}
    extra = []
    for question in cases.QUESTIONS:
        module = cases.module(question)
        if not hasattr(module, "large_kernels"):
            continue
        for dtype in DTYPES:
            for label, kernel in module.large_kernels(np.dtype(dtype)).items():
                for (name, argtypes), entry in by_name.items():
                    if (name == kernel.py_func.__name__ and entry["dispatcher"] is not kernel
                            and launch_dtype(argtypes) == dtype):
                        extra.append({"dispatcher": kernel, "argtypes": argtypes, "block": entry["block"],
                                      "kernel": f"{question}.{label}"})
    return extra


def _plain_launch_config(self, dispatcher, griddim, blockdim, stream, sharedmem):
    """_LaunchConfiguration without the stream look-up (it asks the driver)."""
    self.dispatcher, self.griddim, self.blockdim = dispatcher, griddim, blockdim
    self.stream, self.sharedmem, self.pre_launch_callbacks = stream, sharedmem, []
    self._kernel_launch_config_sensitive = None


def module_kernels() -> set[str]:
    """Every module-level @cuda.jit kernel in kernels/ (device functions left out)."""
    import importlib
    from numba.cuda.dispatcher import CUDADispatcher
    names = set()
    paths = [(p, "backprop_traps.kernels") for p in sorted((REPO / "kernels").glob("*.py"))]
    paths += [(p, "backprop_traps.kernels.common") for p in sorted((REPO / "kernels" / "common").glob("*.py"))]
    for path, package in paths:
        if path.stem.startswith("_"):
            continue
        module = importlib.import_module(f"{package}.{path.stem}")
        for name, obj in vars(module).items():
            if (isinstance(obj, CUDADispatcher) and not obj.targetoptions.get("device")
                    and obj.py_func.__module__ == module.__name__):
                names.add(f"{path.stem}.{name}")
    return names


# ---------------------------------------------------------------- 2-3. compile and assemble

_F64 = re.compile(r"^\s*(?:@!?%p\d+\s+)?([a-z]+(?:\.[a-z0-9]+)*)", re.M)


def f64_instructions(ptx: str) -> int:
    """PTX instructions that compute, convert or move float64 (opcode with a .f64 part)."""
    return sum(1 for op in _F64.findall(ptx) if ".f64" in op)


def assemble(ptx: str, cc: tuple[int, int]) -> dict:
    """ptxas's report for the PTX on sm_XY, through nvJitLink."""
    from cuda.bindings import nvjitlink
    handle = nvjitlink.create(2, [f"-arch=sm_{cc[0]}{cc[1]}", "-verbose"])
    try:
        data = ptx.encode()
        nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), "kernel")
        nvjitlink.complete(handle)
        log = bytearray(nvjitlink.get_info_log_size(handle))
        nvjitlink.get_info_log(handle, log)
    finally:
        nvjitlink.destroy(handle)
    text = log.decode(errors="replace")
    number = lambda pattern: int(m.group(1)) if (m := re.search(pattern, text)) else 0
    return {"registers": number(r"Used (\d+) registers"),
            "spill_stores": number(r"(\d+) bytes spill stores"),
            "spill_loads": number(r"(\d+) bytes spill loads"),
            "stack": number(r"(\d+) bytes stack frame"),
            "smem": number(r"(\d+) bytes smem")}


def compile_all(launches: list[dict], only: str = "") -> list[dict]:
    from types import SimpleNamespace
    from numba import cuda
    from numba.cuda import dispatcher as cuda_dispatcher
    # Device functions a kernel calls compile for "the current device": there is none, so
    # they are told the lowest target (their PTX is then built into each kernel's per target).
    device = SimpleNamespace(compute_capability=TARGETS[0])
    cuda_dispatcher.get_current_device = lambda: device
    rows = []
    for entry in (e for e in launches if only in e["kernel"]):
        dispatcher = entry["dispatcher"]
        options = {k: v for k, v in dispatcher.targetoptions.items()
                   if k in ("fastmath", "lineinfo", "debug", "opt", "launch_bounds")}
        for cc in TARGETS:
            row = {"kernel": entry["kernel"], "dtype": entry["dtype"], "target": f"sm_{cc[0]}{cc[1]}",
                   "block": entry["block"], "error": None,
                   "signature": ", ".join(str(a) for a in entry["argtypes"])}
            try:
                ptx, _ = cuda.compile_ptx(dispatcher.py_func, entry["argtypes"], cc=cc, **options)
                row.update(assemble(ptx, cc), f64=f64_instructions(ptx), **ptx_stats.memory_stats(ptx))
            except Exception as exc:  # a kernel that does not compile is a row, not a crash
                row["error"] = f"{type(exc).__name__}: {exc}"[:300]
            rows.append(row)
    return rows


# ---------------------------------------------------------------- verdicts and the table

def problems(row: dict) -> list[str]:
    """What is wrong with one compiled kernel, in words (empty when nothing is)."""
    if row["error"]:
        return [f"does not compile ({row['error']})"]
    found = []
    if row["spill_stores"] or row["spill_loads"]:
        found.append(f"spills {row['spill_stores']} B stored, {row['spill_loads']} B loaded to local memory")
    if row["dtype"] == "float32" and row["f64"]:
        found.append(f"{row['f64']} float64 instructions in a float32 launch")
    if row["registers"] > REGISTER_BOUND:
        found.append(f"{row['registers']} registers, over the bound of {REGISTER_BOUND}")
    if row["smem"] > MAX_SHARED_BYTES:
        found.append(f"{row['smem']} B of static shared memory, over a block's {MAX_SHARED_BYTES}")
    threads = math.prod(row["block"])
    if row["registers"] * threads > REGISTERS_PER_SM:
        found.append(f"{row['registers']} registers x {threads} threads, over a block's {REGISTERS_PER_SM:,}")
    return found


def nvvm_missing() -> str | None:
    """Why NVVM cannot compile here, or None when it can."""
    try:
        from numba import cuda
        from numba.cuda.cudadrv import nvvm
        from cuda.bindings import nvjitlink
        if cuda.is_available.__module__.startswith("numba.cuda.simulator"):
            return "the Numba CUDA simulator is on (NUMBA_ENABLE_CUDASIM=1): it compiles nothing"
        nvvm.NVVM()
        nvjitlink.version()
    except Exception as exc:  # noqa: BLE001 (any reason is a reason to skip)
        return (f"no NVVM/nvJitLink here ({type(exc).__name__}: {str(exc).splitlines()[0][:160]}); "
                "pip install -e '.[test]' installs them from PyPI")
    return None


def markdown(rows: list[dict], facts: dict) -> str:
    lines = [f"# Kernels compiled for sm_80 and sm_90 without a GPU ({datetime.date.today()})", "",
             "`python benchmarks/kernels_static.py --out benchmarks/results/kernels_static.md`: NVVM "
             "(PyPI's nvidia-nvvm) to PTX, nvJitLink to machine code, for every kernel the benchmark "
             "launches, with the argument types of its TINY cases. Registers per thread (bound: "
             f"{REGISTER_BOUND}), local-memory spill bytes (stores/loads), static shared memory in "
             "bytes, float64 PTX instructions (none allowed in a float32 launch). From the PTX "
             "(benchmarks/ptx_stats.py): global load/store instructions (+ atomics), how many of them "
             "sit in loops, the widths of the loads in bits (`vector`: a .v2/.v4 load or store), 64-bit "
             "integer div/rem (in loops), and local-memory instructions. Per element, as the simulator "
             "counts them, and the speed they predict: the section below the table.", "",
             "| kernel | dtype | target | block | registers | spills (st/ld) | smem B | f64 instr "
             "| ld/st | in loops | load bits | div64 (loop) | local | verdict |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["error"]:
            lines.append(f"| {r['kernel']} | {r['dtype']} | {r['target']} |" + " |" * 10 + " does not compile |")
            continue
        verdict = "; ".join(problems(r)) or "ok"
        block = "x".join(str(b) for b in r["block"] if b > 1) or "1"
        cells = ptx_stats.describe(r)
        lines.append(f"| {r['kernel']} | {r['dtype']} | {r['target']} | {block} | {r['registers']} | "
                     f"{r['spill_stores']}/{r['spill_loads']} | {r['smem']} | {r['f64']} | "
                     + " | ".join(cells.values()) + f" | {verdict} |")
    return "\n".join(lines) + "\n\n" + speed_prediction.section(rows, facts)


def simulated_facts() -> dict:
    """benchmarks/simulated_facts.py's result, from a child process (it needs the simulator)."""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "simulated_facts.py")], env=env,
                          capture_output=True, text=True, timeout=900)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"simulated_facts.py printed nothing (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(lines[-1])


def run(only: str = "") -> dict:
    """The whole static pass as plain data: {"skip": reason} or rows, coverage and failures.
    Rows hold only JSON types (the compile step's objects are dropped)."""
    reason = nvvm_missing()
    if reason:
        return {"skip": reason}
    launches = record_launches()
    rows = compile_all(launches, only)
    for row in rows:
        row["block"] = list(row["block"])
    covered = {r["kernel"] for r in rows}
    return {"rows": rows, "facts": {} if only else simulated_facts(),
            "uncovered": [] if only else sorted(module_kernels() - covered),
            "register_bound": REGISTER_BOUND,
            "failures": [f"{r['kernel']} ({r['dtype']}, {r['target']}): {p}"
                         for r in rows for p in problems(r)]}


def cache_key() -> str:
    """What the result depends on: the kernels (question 20's are in its notebook), the cases,
    this file, numba-cuda and NVVM."""
    import hashlib
    from importlib import metadata
    digest = hashlib.sha256()
    files = (sorted(p for p in (REPO / "kernels").rglob("*.py") if "__pycache__" not in p.parts)
             + sorted((REPO / "solutions").glob("*_maxpool_kernel.ipynb")))  # question 20's kernels live there
    here = Path(__file__).resolve().parent
    for path in files + [here / name for name in ("kernels_static.py", "ptx_stats.py", "speed_prediction.py",
                                                  "simulated_facts.py")]:
        digest.update(path.name.encode() + path.read_bytes())
    for dist in ("numba", "numba-cuda", "nvidia-nvvm", "nvidia-nvjitlink"):
        try:
            digest.update(f"{dist}={metadata.version(dist)}".encode())
        except metadata.PackageNotFoundError:
            digest.update(dist.encode())
    return digest.hexdigest()[:20]


def cached_run(cache_dir: Path | None) -> dict:
    """``run()``, read from ``cache_dir`` when nothing it depends on changed (a skip is not kept)."""
    if cache_dir is None:
        return run()
    path = cache_dir / f"kernels_static-{cache_key()}.json"
    if path.is_file():
        try:
            return json.loads(path.read_text())
        except ValueError:
            pass
    result = run()
    if "rows" in result:
        cache_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result))
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    parser.add_argument("--out", type=Path, help="write the markdown table here")
    parser.add_argument("--only", default="", metavar="TEXT",
                        help="compile only the kernels whose name holds TEXT (no cache, no table file)")
    parser.add_argument("--cache", type=Path, metavar="DIR",
                        help="keep the result in DIR and reuse it while the kernels, cases and compilers are unchanged")
    args = parser.parse_args(argv)
    os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
    import warnings
    warnings.simplefilter("ignore")  # numba's performance warnings about tiny grids: not ours
    result = run(args.only) if args.only else cached_run(args.cache)
    if args.json:
        print(json.dumps(result))
    elif "skip" in result:
        print(f"skipped: {result['skip']}")
    else:
        print(markdown(result["rows"], result.get("facts", {})))
        for line in result["failures"]:
            print("FAIL", line)
        for name in result["uncovered"]:
            print("FAIL", name, "is launched by no benchmark case: not compiled")
    if args.out and "rows" in result and not args.only:
        args.out.write_text(markdown(result["rows"], result.get("facts", {})))
    return 1 if result.get("failures") or result.get("uncovered") else 0


if __name__ == "__main__":
    sys.exit(main())
