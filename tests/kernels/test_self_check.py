"""Every kernel file's __main__ (kernels/runtime/self_check.py): it checks its kernels against the
solution notebook and times them; the same pass, in process, under the simulator (on the GPU
with BACKPROP_TRAPS_REAL_GPU=1), and as ``python -m`` from a folder outside the repository."""
import os
import subprocess
import sys

import pytest

from conftest import REAL_GPU
from backprop_traps.kernels.runtime import self_check

# Where the pass says it ran: the simulator, or the device's name and the backend (numba-cuda
# or numba-cuda-mlir, kernels/runtime/device.py) on a real GPU.
WHERE = "(numba-cuda" if REAL_GPU else "the Numba CUDA simulator"


@pytest.mark.parametrize("question", ["straight_through", "custom_function"])
def test_a_kernel_files_main_checks_its_kernels_against_the_solution(question, capsys):
    assert self_check.main(question, runs=1) == 0
    out = capsys.readouterr().out
    assert WHERE in out and "FAIL" not in out
    assert out.count(" ok ") >= 4  # two kernels, two dtypes


# Questions 01-14's kernel files (issue 29), 21-24's (issue 37), 30's (issue 49), and 17-19's
# version 1 (issue 48); 15 and 16 came with mains of their own. A version 2 has no main: its
# version 1's checks both (kernels/cases/<question>.py holds a case a version).
PLANNED = ("attention_backward", "forward_vs_reverse", "grad_accumulation", "layernorm_backward", "loss_scaling",
           "mlp_backprop", "per_step_update_trap", "reparameterisation", "routing_trap", "softmax_ce",
           "straight_through", "vram_trap", "residual_backward", "training_symptoms", "custom_function",
           "memory_budget", "ddp_accumulation",
           "rmsnorm_rope_backward",
           "moe_router_backward",
           "weight_tying",
           "embedding_backward",
           "tensor_parallel_linear",
           "adamw_step", "gradient_clinic", "bptt",
           )


def test_every_kernel_file_has_the_plan():
    from pathlib import Path
    for path in (Path(self_check.__file__).parents[1] / f"{name}.py" for name in PLANNED):  # kernels/
        text = path.read_text()
        assert f"python -m backprop_traps.kernels.{path.stem}" in text, path.name  # how to run it, in its header
        assert text.rstrip().endswith(f'sys.exit(main("{path.stem}"))'), path.name  # its __main__


def test_a_version_2_is_checked_by_its_version_1s_main():
    from pathlib import Path
    for path in sorted((Path(self_check.__file__).parents[1]).glob("*_v2.py")):
        question = path.stem.removesuffix("_v2")
        assert "__main__" not in path.read_text(), path.name
        assert f"{question}_v2" in (path.parent / "cases" / f"{question}.py").read_text(), path.name  # a case of its own


def test_an_in_place_kernel_is_checked_on_fresh_inputs_however_many_timed_runs():
    # the fused softmax-CE overwrites its logits: timing it again must not change what is compared
    assert self_check.main("softmax_ce", runs=2) == 0


@pytest.mark.parametrize("question", ["straight_through", "mlp_backprop"])  # the second launches vram_trap's kernels
def test_a_kernel_file_checks_itself_from_a_folder_outside_the_repository(question, tmp_path):
    """Issue 34: it imported benchmarks/, which only the repository root has. From elsewhere,
    with nothing of the repository on sys.path, the tiny cases come with the package."""
    # PYTHONPATH less any folder that holds benchmarks/ (the repository's root, where a caller put
    # it; benchmarks/gpu_session.py's own holds only a link to backprop_traps/, which stays)
    env = dict(os.environ)
    kept = [p for p in env.pop("PYTHONPATH", "").split(os.pathsep)
            if p and not os.path.isdir(os.path.join(p, "benchmarks"))]
    if kept:
        env["PYTHONPATH"] = os.pathsep.join(kept)
    if not REAL_GPU:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    code = ("import runpy, sys\n"
            "assert not any(p and 'benchmarks' in __import__('os').listdir(p) for p in sys.path "
            "if __import__('os').path.isdir(p)), 'a folder holding benchmarks/ is on sys.path'\n"
            "sys.argv = ['x']\n"
            f"try:\n    runpy.run_module('backprop_traps.kernels.{question}', run_name='__main__')\n"
            "except SystemExit as exit:\n    assert 'benchmarks' not in sys.modules\n    raise\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert WHERE in done.stdout and done.stdout.count(" ok ") >= 4 and "FAIL" not in done.stdout
