"""The kit's own questions, as an installed wheel carries them: ``solutions/`` and
``exercises/`` beside this file (the repository's top-level folders of the same names,
mapped here by pyproject.toml). In a clone they stay at the top of the repository and this
folder holds only this file; ``backprop_traps.grader.loading.questions.kit_root`` picks whichever holds them.
"""
