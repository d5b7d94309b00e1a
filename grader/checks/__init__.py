"""Hidden checks, one per question: ``grader/checks/<id>.py``, or for a question that needs more
than one file the package ``grader/checks/<id>/`` with ``__init__.py`` (defines ``QUESTION`` and
the checks), ``probes.py`` (input builders and probes) and ``traps.py`` (the wrong variants and
how they are recognised), and where the question simulates something of its own, one more module
per such concept (training_symptoms: ``net.py``, the small network; ``runs.py``, the planted runs).

Instructors who keep questions outside the repo put ``checks/<id>.py`` or
``checks/<id>/__init__.py`` in their own questions folder (same layout as this repo); it is
loaded by path.
"""
from __future__ import annotations

# the loader lives below the engine (grader/loading/hidden_checks.py); these names stay here,
# where instructors' tools and the kit's commands have always imported them
from backprop_traps.grader.loading.hidden_checks import _load_external, checks_source, load_question  # noqa: F401
