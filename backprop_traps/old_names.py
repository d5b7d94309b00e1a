"""The kit's import names before they moved under ``backprop_traps`` (issue 27): released
notebooks' grade cells say ``from grader.notebook_grade import ...``, instructors' nbgrader
courses ``from grader.nbgrader_bridge import ...``. These keep working as aliases:
``grader.X`` and ``kernels.X`` are the very module objects ``backprop_traps.grader.X`` and
``backprop_traps.kernels.X``, not second copies.

Another project's top-level ``grader`` or ``kernels`` always wins: the alias finder sits at the
END of ``sys.meta_path``, so it is asked only when no other finder knows the name. Once a
top-level old name is aliased, a second finder goes to the FRONT, for that name's submodules
only (the path finder would otherwise load ``grader/notebook_grade.py`` a second time).

Modules that moved inside the package keep their old paths the same way (``MOVED``, issue 48):
a question folder's kernel file made by an earlier ``grade new`` says ``from
backprop_traps.kernels.device import cuda``, which is now ``backprop_traps.kernels.runtime.device``.
Only a name nothing else finds reaches the alias; the kit itself imports the new paths
(tests/kernels/test_kernels_layout.py checks).

Installed at interpreter start by ``backprop_traps_old_names.pth`` (pyproject.toml's build
hook, backprop_traps/_build.py), so it runs in every Python process of the environment: it
imports nothing but ``sys`` until an old name is actually imported.
"""
import sys

OLD_NAMES = ("grader", "kernels")
NEW_PREFIX = "backprop_traps."
# issue 48: kernels/ split into common/ (shared device code) and runtime/; the race checker
# went to its user, the sandbox
MOVED = {**{f"backprop_traps.kernels.{m}": f"backprop_traps.kernels.common.{m}"
            for m in ("patterns", "row_reduction", "tiled_matmul")},
         **{f"backprop_traps.kernels.{m}": f"backprop_traps.kernels.runtime.{m}"
            for m in ("device", "simulator_fixes", "launch_limits", "dry_run", "self_check")},
         "backprop_traps.kernels.race_checker": "backprop_traps.grader.sandbox.race_checker"}


class _AliasLoader:
    """Loads an old name as the module object of the new one (``new``)."""

    def __init__(self, new: str):
        self.new = new
        self._spec = None

    def create_module(self, spec):
        import importlib
        module = importlib.import_module(self.new)
        self._spec = module.__spec__  # the import system sets __spec__ to the alias's; put it back
        return module

    def exec_module(self, module):
        module.__spec__ = self._spec


def _alias_spec(name: str):
    from importlib.machinery import ModuleSpec
    new = NEW_PREFIX + name
    return ModuleSpec(name, _AliasLoader(MOVED.get(new, new)))


def _is_aliased(top: str) -> bool:
    """``top`` was imported through this module (not another project's package)."""
    ours = sys.modules.get(NEW_PREFIX + top)
    return ours is not None and sys.modules.get(top) is ours


class OldTopLevelNames:
    """At the end of ``sys.meta_path``: ``grader`` and ``kernels`` when nothing else has them, and
    the old paths of moved modules (nothing else has those)."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name in MOVED:
            from importlib.machinery import ModuleSpec
            return ModuleSpec(name, _AliasLoader(MOVED[name]))
        if name not in OLD_NAMES:
            return None
        if OldSubmodules not in sys.meta_path:
            sys.meta_path.insert(0, OldSubmodules)
        return _alias_spec(name)


class OldSubmodules:
    """At the front of ``sys.meta_path``, once needed: ``grader.X`` and ``kernels.X`` while the
    top-level name is our alias."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        top, dot, _ = name.partition(".")
        if not dot or top not in OLD_NAMES or not _is_aliased(top):
            return None
        return _alias_spec(name)


def install() -> None:
    """Called by the .pth file; a second call changes nothing."""
    if OldTopLevelNames not in sys.meta_path:
        sys.meta_path.append(OldTopLevelNames)
