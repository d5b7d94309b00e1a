"""The stub layout inside an nbgrader course: a preprocessor for ``nbgrader generate_assignment``.

A course releases the solution notebooks through nbgrader, not through `grade release`, so
by default its students would read the derivation and the mistakes. Put this first in the
course's ``nbgrader_config.py`` and the released notebooks get exactly the stub layout
(grader/authoring/stub_layout.py):

    from nbgrader.converters import GenerateAssignment
    c.GenerateAssignment.preprocessors = ["backprop_traps.grader.authoring.nbgrader_layout.StubLayout",
                                          *GenerateAssignment.preprocessors.default()]

It never drops a cell nbgrader grades (autograde needs every one), so checksums and
autograde are unchanged.
"""
from nbgrader.preprocessors import NbGraderPreprocessor

from backprop_traps.grader.authoring.stub_layout import to_stub_layout


class StubLayout(NbGraderPreprocessor):
    """Drop the derivation and solution-only cells, cut the interview cell to its question,
    and let Run All go on past the visible tests."""

    def preprocess(self, nb, resources):
        question = (nb.metadata.get("backprop_traps") or {}).get("question") or "ID"
        return to_stub_layout(nb, question, keep_nbgrader_cells=True), resources
