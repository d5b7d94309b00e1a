"""`grade bench`: the kernel benchmark (benchmarks/kernels_gpu.py) from the `grade` command."""
import importlib.util
import sys
from pathlib import Path

import click

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "kernels_gpu.py"


def load_benchmark():
    """The benchmark script as a module. It lives in the checkout, not in the installed package."""
    if not SCRIPT.exists():
        raise click.ClickException(f"{SCRIPT} is missing: `grade bench` runs from a checkout "
                                   "of the repository (pip install -e .)")
    spec = importlib.util.spec_from_file_location("kernels_gpu_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@click.command("bench")
@click.option("--runs", type=click.IntRange(1, 10**6), default=None, help="Timed launches per kernel; the median is kept [50].")
@click.option("--warmup", type=click.IntRange(0, 10**6), default=None, help="Untimed launches before timing [5].")
@click.option("--simulator", is_flag=True, help="Time nothing: only the simulator smoke pass.")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Where to write the markdown [benchmarks/results/kernels_gpu.md].")
def bench(runs, warmup, simulator, out):
    """Time every kernel on this machine's GPU against its copy bandwidth and PyTorch.

    Without a GPU it says so, times nothing, and checks every kernel once under the
    Numba CUDA simulator instead.
    """
    argv = []
    for flag, value in (("--runs", runs), ("--warmup", warmup), ("--out", out)):
        if value is not None:
            argv += [flag, str(value)]
    if simulator:
        argv.append("--simulator")
    sys.exit(load_benchmark().main(argv))
