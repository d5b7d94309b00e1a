"""Where the kernels get ``cuda`` (kernels/runtime/device.py): numba.cuda (or its simulator) unless
BACKPROP_TRAPS_CUDA=mlir asks for numba-cuda-mlir, and the mlir package imports and sees a
GPU; otherwise numba.cuda with one sentence saying why. The import and the GPU are mocked."""
import sys
import types

import pytest

from conftest import REAL_GPU
from backprop_traps.kernels.runtime import device


def fake_modules(mlir_importable=True, gpu=True, simulator=False, broken=False):
    """An import_module stand-in: numba.cuda (the simulator's or not) and numba_cuda_mlir.cuda."""
    def is_available():
        if broken:
            raise RuntimeError("CUDA driver library cannot be found")
        return gpu

    numba_cuda = types.SimpleNamespace(name="numba.cuda", is_available=lambda: False)
    numba_cuda.is_available.__module__ = "numba.cuda.simulator.api" if simulator else "numba.cuda.api"
    mlir = types.SimpleNamespace(name="numba_cuda_mlir.cuda", is_available=is_available)

    def import_module(name):
        if name == "numba.cuda":
            return numba_cuda
        if name == "numba_cuda_mlir.cuda" and mlir_importable:
            return mlir
        raise ModuleNotFoundError(f"No module named {name.split('.')[0]!r}")
    return import_module


def test_numba_cuda_by_default():
    cuda, backend, note = device.choose({}, fake_modules())
    assert cuda.name == "numba.cuda" and backend == "numba-cuda" and note is None
    cuda, backend, note = device.choose({"BACKPROP_TRAPS_CUDA": "numba"}, fake_modules())
    assert cuda.name == "numba.cuda" and note is None


def test_the_simulator_is_named_as_such():
    cuda, backend, note = device.choose({"NUMBA_ENABLE_CUDASIM": "1"}, fake_modules(simulator=True))
    assert backend == "numba-cuda simulator" and note is None


@pytest.mark.parametrize("value", ["mlir", "MLIR", " mlir "])
def test_mlir_when_asked_installed_and_a_gpu_is_there(value):
    cuda, backend, note = device.choose({"BACKPROP_TRAPS_CUDA": value}, fake_modules())
    assert cuda.name == "numba_cuda_mlir.cuda" and backend == "numba-cuda-mlir" and note is None


@pytest.mark.parametrize("modules, env, says", [
    (fake_modules(mlir_importable=False), {}, "pip install 'backprop-traps[gpu]'"),
    (fake_modules(gpu=False), {}, "sees no GPU"),
    (fake_modules(broken=True), {}, "CUDA driver library cannot be found"),
    (fake_modules(simulator=True), {"NUMBA_ENABLE_CUDASIM": "1"}, "has no simulator"),
])
def test_mlir_asked_for_but_unusable_falls_back_with_one_sentence(modules, env, says):
    cuda, backend, note = device.choose({"BACKPROP_TRAPS_CUDA": "mlir", **env}, modules)
    assert cuda.name == "numba.cuda" and backend.startswith("numba-cuda") and "mlir" not in backend
    assert says in note and note.count("\n") == 0 and note.endswith(".")


def test_an_unknown_choice_is_named():
    cuda, _, note = device.choose({"BACKPROP_TRAPS_CUDA": "cupy"}, fake_modules())
    assert cuda.name == "numba.cuda" and "'cupy' is not one of numba, mlir" in note


def test_the_note_goes_to_stderr_once_at_import(tmp_path):
    """The real module, in a child: asked for mlir, which this machine lacks (or has no GPU for)."""
    import os
    import subprocess
    import sys
    env = {**os.environ, "BACKPROP_TRAPS_CUDA": "mlir", "NUMBA_ENABLE_CUDASIM": "1"}
    done = subprocess.run([sys.executable, "-c", "from backprop_traps.kernels import vram_trap; "
                           "from backprop_traps.kernels.runtime import device; print(device.BACKEND)"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "numba-cuda simulator"
    assert done.stderr.count("BACKPROP_TRAPS_CUDA=mlir") == 1 and "Traceback" not in done.stderr


@pytest.mark.skipif(REAL_GPU, reason="under BACKPROP_TRAPS_REAL_GPU=1 the kernels run on the device")
def test_this_session_runs_the_simulator_with_its_checks():
    from numba.cuda.simulator import kernel as sim_kernel
    assert device.BACKEND == "numba-cuda simulator" and device.simulated()
    assert getattr(sim_kernel.FakeCUDAKernel.__getitem__, "_launch_limits", False)
    from backprop_traps.kernels.runtime import simulator_fixes
    # the interval the simulated threads run fastest at, and nothing reset it (self_check once did)
    assert sys.getswitchinterval() == simulator_fixes.SWITCH_INTERVAL


@pytest.mark.skipif(REAL_GPU, reason="under BACKPROP_TRAPS_REAL_GPU=1 the kernels run on the device")
def test_a_kernel_files_check_keeps_the_switch_interval():
    from backprop_traps.kernels.runtime import self_check, simulator_fixes
    assert self_check.main("custom_function", runs=1) == 0
    assert sys.getswitchinterval() == simulator_fixes.SWITCH_INTERVAL
