"""Backprop Traps, as installed: ``backprop_traps.grader`` (the `grade` command, its engine and
the hidden checks) and ``backprop_traps.kernels`` (the Numba CUDA reference kernels).

In the repository these are the folders grader/ and kernels/; pyproject.toml maps them under
this one top-level name, so the kit never claims `grader` or `kernels` in a learner's
environment. Keep this file free of imports: old_names.py loads it in every Python process.
"""
