"""Build hook (pyproject.toml's [tool.setuptools.cmdclass]; never shipped): puts
``backprop_traps_old_names.pth`` at the top of site-packages, in the wheel and in an editable
install alike, so that the old import names keep working (old_names.py).

setuptools packages only files inside packages, and data_files land under the prefix, not in
site-packages: a .pth needs build_py to write it beside the packages (numba-cuda ships its
``_numba_cuda_redirector.pth`` the same way). An editable install does not copy build_py's
output, so its strategy is wrapped to add the same file to the editable wheel.
"""
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

PTH_NAME = "backprop_traps_old_names.pth"  # sorts after __editable__.*.pth, which maps the package
# Python runs this line at every start-up: if the package is gone (an editable install whose
# source folder moved, a half-finished uninstall) it must stay silent, not print a traceback.
PTH_TEXT = ("import importlib.util as _spec; _spec.find_spec('backprop_traps') and "
            "__import__('backprop_traps.old_names').old_names.install()\n")
HOOK_MODULE, HOOK_FILE = "_build", "backprop_traps/_build.py"


class BuildPyWithOldNames(build_py):
    """build_py, plus the .pth file at the root of the wheel, less this hook itself."""

    def run(self):
        super().run()
        if not self.editable_mode:
            target = f"{self.build_lib}/{PTH_NAME}"
            with open(target, "w", encoding="utf-8") as pth:
                pth.write(PTH_TEXT)

    def get_outputs(self, include_bytecode=True):
        outputs = super().get_outputs(include_bytecode)
        return outputs if self.editable_mode else outputs + [f"{self.build_lib}/{PTH_NAME}"]

    def find_package_modules(self, package, package_dir):
        modules = super().find_package_modules(package, package_dir)
        return [m for m in modules if not (m[0] == "backprop_traps" and m[1] == HOOK_MODULE)]

    def get_source_files(self):
        return super().get_source_files() + [HOOK_FILE]  # out of the wheel, but the sdist needs it


class _WithOldNames:
    """An editable strategy (setuptools' EditableStrategy protocol) that also writes the .pth."""

    def __init__(self, strategy):
        self.strategy = strategy

    def __call__(self, wheel, files, mapping):
        self.strategy(wheel, files, mapping)
        wheel.writestr(PTH_NAME, PTH_TEXT.encode("utf-8"))

    def __enter__(self):
        self.strategy.__enter__()
        return self

    def __exit__(self, *exc):
        return self.strategy.__exit__(*exc)


class EditableWheelWithOldNames(editable_wheel):
    def _select_strategy(self, name, tag, build_lib):
        return _WithOldNames(super()._select_strategy(name, tag, build_lib))
