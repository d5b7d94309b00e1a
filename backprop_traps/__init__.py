"""Backprop Traps, as installed: ``backprop_traps.grader`` (the `grade` command, its engine and
the hidden checks) and ``backprop_traps.kernels`` (the Numba CUDA reference kernels).

In the repository these are the folders grader/ and kernels/; pyproject.toml maps them under
this one top-level name, so the kit never claims `grader` or `kernels` in a learner's
environment. Keep this file cheap: old_names.py loads it in every Python process (``os`` is
already loaded by then; nothing else is imported).

A source checkout (a clone, a ``git archive``, an unpacked sdist) run with nothing installed,
or with the checkout's root first on sys.path (``python -m pytest`` from it, a script that
puts it there): this folder is then found as the package, and grader/ and kernels/ sit beside
it, not in it. ``__path__`` then also names the checkout's root, so ``backprop_traps.grader``
is grader/ and ``backprop_traps.kernels`` is kernels/, the same files an editable install
maps (issue 45: a GPU machine's session runs from such an archive). The build hook _build.py
is the checkout's mark: it never travels in a wheel, whose package is left as it is.
"""
import os as _os

_here = _os.path.dirname(__file__)
if _os.path.isfile(_os.path.join(_here, "_build.py")):
    _root = _os.path.dirname(_os.path.realpath(_here))  # also through a link to this folder
    if _os.path.isfile(_os.path.join(_root, "grader", "__init__.py")):
        __path__.append(_root)  # noqa: F821  (a package's own __path__)
    del _root
del _here
