"""Every launch within CUDA's limits, at the benchmark's LARGE sizes and at sizes that fill an
80 GB GPU, checked without a GPU and without running a kernel (kernels/runtime/dry_run.py).

A grid of ceil(N / 4) blocks along y ran in the simulator at any N and failed on a GPU at
N = 524,288 (issue 34). Here every benchmark case is built from stand-ins that hold no memory
and "launched": each launch is recorded with its grid and block and held to
kernels/runtime/launch_limits.py. The simulator checks the same limits on every real launch in the
test suite (kernels/runtime/device.py installs it), so a new kernel cannot slip past either way.
"""
import ast
from pathlib import Path

import numpy as np
import pytest

from numba import cuda  # the plain import, as a new kernel file might do: the check is on the class

from conftest import REAL_GPU
from backprop_traps.kernels import cases
from backprop_traps.kernels.runtime import launch_limits
from backprop_traps.kernels.runtime.dry_run import DryRunError, ShapeOnly, dry_run

KERNELS = Path(cases.__file__).parent.parent
# the files that hold kernels: the questions' (kernels/*.py) and the shared ones (kernels/common/)
KERNEL_FILES = sorted(KERNELS.glob("*.py")) + sorted((KERNELS / "common").glob("*.py"))
DTYPES = (np.float32, np.float64)


def dry(question, size, shape, dtype):
    """The DryRun of one question's cases at one shape: every launch recorded, none run."""
    with dry_run() as run:
        built = cases.module(question).cases(shape, np.dtype(dtype), cases.Arrays(None, dry=True))
        for case in built:
            case.launch()
    run.cases = built
    return run


def every_dry_run(sizes=("large", "huge")):
    for question in cases.QUESTIONS:
        for size in sizes:
            for shape in cases.shapes(question, size):
                for dtype in DTYPES:
                    yield question, size, shape, dtype, dry(question, size, shape, dtype)


@pytest.fixture(scope="module")
def runs():
    return list(every_dry_run())


def test_every_launch_fits_cudas_limits_at_large_and_at_80_gb(runs):
    refused = [f"{q} {size} {shape} {np.dtype(dt).name}: {line}"
               for q, size, shape, dt, run in runs for line in run.refused]
    assert not refused, "launches a GPU refuses:\n" + "\n".join(refused)
    assert sum(len(run.launches) for *_, run in runs) > 500


def test_huge_shapes_fill_an_80_gb_gpu_and_fit_it(runs):
    """HUGE is "the largest size that fits 80 GB": every question's HUGE shapes hold between
    half and all of it, in float32 (float64 for a question with no float32 cases)."""
    seen = {}
    for question, size, shape, dtype, run in runs:
        if size == "huge" and run.cases:
            seen.setdefault((question, repr(shape)), run.allocated)  # float32 first, where there is one
    assert {q for q, _ in seen} == set(cases.QUESTIONS)
    wrong = {key: f"{gb / 1e9:.1f} GB" for key, gb in seen.items()
             if not cases.GPU_BYTES / 2 <= gb <= cases.GPU_BYTES}
    assert not wrong, f"HUGE shapes outside 40-80 GB: {wrong}"


def _launching_functions():
    """module.function for every function in kernels/*.py and kernels/common/*.py whose body has a
    ``kernel[...](...)``."""
    found = set()
    for path in KERNEL_FILES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                    isinstance(call, ast.Call) and isinstance(call.func, ast.Subscript)
                    for call in ast.walk(node)):
                found.add(f"{path.stem}.{node.name}")
    return found


def test_every_function_that_launches_is_dry_run(runs):
    """A launch whose grid no case computes would escape the limit test: every function in
    kernels/ that launches must be called by some case (give it one in kernels/cases/)."""
    callers = {launch.caller for *_, run in runs for launch in run.launches}
    launching = _launching_functions()
    assert len(launching) > 30
    assert not launching - callers, f"launch kernels but no case calls them: {sorted(launching - callers)}"


def _kernels_defined():
    """module.name of every kernel (``@cuda.jit`` or ``bounded_jit``, not device=True) in kernels/*.py,
    factory-made ones included (kernels/common/*.py too)."""
    found = set()
    for path in KERNEL_FILES:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef):
                continue
            for decorator in node.decorator_list:
                text = ast.unparse(decorator)
                if "jit" in text and "device=True" not in text:
                    found.add(f"{path.stem}.{node.name}")
    return found


def test_every_kernel_has_a_benchmark_case(runs):
    """Cases cannot silently shrink: a kernel no case launches is neither timed on a GPU nor
    compiled by benchmarks/kernels_static.py."""
    launched = {launch.kernel for *_, run in runs for launch in run.launches}
    defined = _kernels_defined()
    assert len(defined) >= 45
    assert not defined - launched, f"kernels no case launches: {sorted(defined - launched)}"
    ninja = {k for k in launched if k.startswith("backprop_ninja.")}
    assert len(ninja) == 12, sorted(ninja)  # issue 34: 11 of them had no case


def test_no_module_under_kernels_imports_benchmarks():
    """benchmarks/ imports the kernels, never the reverse: the wheel carries no benchmarks/."""
    offenders = []
    for path in sorted(KERNELS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.relative_to(KERNELS)}: {n}" for n in names if n.split(".")[0] == "benchmarks"]
    assert not offenders, offenders


def test_kernel_modules_take_cuda_from_the_selector():
    """One place picks numba.cuda, the simulator or numba-cuda-mlir (kernels/runtime/device.py)."""
    allowed = {"device.py", "launch_limits.py", "dry_run.py", "simulator_fixes.py"}
    offenders = []
    for path in sorted(KERNELS.rglob("*.py")):
        if path.name in allowed and path.parent == KERNELS / "runtime":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "numba" and any(a.name == "cuda" for a in node.names):
                offenders.append(str(path.relative_to(KERNELS)))
            if isinstance(node, ast.Import) and any(a.name.startswith("numba.cuda") for a in node.names):
                offenders.append(str(path.relative_to(KERNELS)))
    assert not offenders, f"import cuda from backprop_traps.kernels.runtime.device instead: {offenders}"


# -- the limits themselves ---------------------------------------------------------------------

@pytest.mark.parametrize("grid, block, ok", [
    ((2 ** 31 - 1, 65_535, 65_535), 1, True), ((2 ** 31, 1), 1, False), ((1, 65_536), 1, False),
    ((1, 1, 65_536), 1, False), (0, 32, False), (1, (1024, 1, 1), True), (1, 1025, False),
    (1, (32, 32), True), (1, (32, 33), False), (1, (1, 1, 64), True), (1, (1, 1, 65), False),
    (1, (1, 1024), True), ((4, 2), (16, 16), True),
])
def test_the_limits(grid, block, ok):
    assert (launch_limits.problems(grid, block) == []) == ok
    if not ok:
        with pytest.raises(launch_limits.LaunchLimitError, match="refuses"):
            launch_limits.check("k", grid, block)


def test_dynamic_shared_memory_over_48_kib_is_refused():
    assert launch_limits.problems(1, 32, 48 * 1024) == []
    assert "shared memory" in launch_limits.problems(1, 32, 48 * 1024 + 1)[0]


@cuda.jit
def fill(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = 1.0


@pytest.mark.skipif(REAL_GPU, reason="the simulator's check: on a GPU the driver refuses the launch itself")
def test_the_simulator_refuses_what_a_gpu_refuses_from_any_kernel():
    out = cuda.to_device(np.zeros(4))
    for grid, block in (((1, 70_000), 4), (1, 2048), (1, (1, 1, 65))):
        with pytest.raises(launch_limits.LaunchLimitError, match="fill"):
            fill[grid, block](out)
    fill[1, 4](out)
    assert out.copy_to_host().tolist() == [1.0] * 4


def test_a_stand_in_has_shapes_and_no_data():
    a = ShapeOnly((3, 4, 5), np.float32)
    assert (a.size, a.nbytes, a[1].shape, a[:, ::2].shape, a.reshape(-1, 5).shape, a.T.shape) == \
        (60, 240, (4, 5), (3, 2, 5), (12, 5), (5, 4, 3))
    with pytest.raises(DryRunError, match="no data"):
        np.asarray(a)
    with pytest.raises(DryRunError):
        float(a[0, 0, 0])


def test_a_dry_run_records_without_running_and_counts_memory():
    from backprop_traps.kernels import vram_trap
    from backprop_traps.kernels.runtime.device import cuda
    with dry_run() as run:
        d_dout, d_W = cuda.device_array((10 ** 9, 8), np.float32), cuda.device_array((8, 8), np.float32)
        d_dh = cuda.device_array((10 ** 9, 8), np.float32)
        vram_trap.backward_input(d_dout, cuda.device_array(1, np.uint8), False, d_W, d_dh, np.float32(0))
    (launch,) = run.launches
    assert launch.caller == "vram_trap.backward_input" and launch.kernel == "vram_trap.linear_backward_input_kernel"
    assert launch.grid == (1, 65_535, 1) and run.refused == []
    assert run.allocated == 2 * 10 ** 9 * 8 * 4 + 8 * 8 * 4 + 1
    assert not isinstance(cuda.device_array(3), ShapeOnly)  # undone on exit
