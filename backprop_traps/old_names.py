"""The kit's import names before they moved under ``backprop_traps`` (issue 27): released
notebooks' grade cells say ``from grader.notebook_grade import ...``, instructors' nbgrader
courses ``from grader.nbgrader_bridge import ...``. These keep working as aliases:
``grader.X`` and ``kernels.X`` are the very module objects ``backprop_traps.grader.X`` and
``backprop_traps.kernels.X``, not second copies.

Another project's top-level ``grader`` or ``kernels`` always wins: the alias finder sits at the
END of ``sys.meta_path``, so it is asked only when no other finder knows the name. Once a
top-level old name is aliased, a second finder goes to the FRONT, for that name's submodules
only (the path finder would otherwise load ``grader/notebook_grade.py`` a second time).

Installed at interpreter start by ``backprop_traps_old_names.pth`` (pyproject.toml's build
hook, backprop_traps/_build.py), so it runs in every Python process of the environment: it
imports nothing but ``sys`` until an old name is actually imported.
"""
import sys

OLD_NAMES = ("grader", "kernels")
NEW_PREFIX = "backprop_traps."


class _AliasLoader:
    """Loads ``old`` as the module object of ``NEW_PREFIX + old``."""

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
    return ModuleSpec(name, _AliasLoader(NEW_PREFIX + name))


def _is_aliased(top: str) -> bool:
    """``top`` was imported through this module (not another project's package)."""
    ours = sys.modules.get(NEW_PREFIX + top)
    return ours is not None and sys.modules.get(top) is ours


class OldTopLevelNames:
    """At the end of ``sys.meta_path``: ``grader`` and ``kernels`` when nothing else has them."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
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
