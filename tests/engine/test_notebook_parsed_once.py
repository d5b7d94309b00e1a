"""`grade FILE` parses the learner's notebook once (issue 48 item 6): the submission's loader
parses it, and the visible tests, the manually graded cells and the history's fingerprint are
all read from that one parse (``Submission.notebook``, ``Submission.fingerprint``)."""
import json

import nbformat
from click.testing import CliRunner

from backprop_traps.grader.cli import main
from backprop_traps.grader.loading.questions import solution_notebooks


def _learners_copy(folder):
    """The solution re-saved as a learner's file: its text differs from the solution's, so the
    reference's own parses (the grader reads the solution too) are not counted."""
    solution = solution_notebooks()["softmax_ce"]
    nb = json.loads(solution.read_text(encoding="utf-8"))
    nb["metadata"]["saved_by"] = "a learner"
    path = folder / "mine.ipynb"
    path.write_text(json.dumps(nb, indent=2), encoding="utf-8")
    return path


def test_grade_file_parses_the_notebook_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the history is written beside the notebook
    path = _learners_copy(tmp_path)
    text = path.read_text(encoding="utf-8")
    parses = []
    real_loads, real_reads, real_read = json.loads, nbformat.reads, nbformat.read

    def loads(s, *args, **kwargs):
        if isinstance(s, (str, bytes, bytearray)) and len(s) == len(text) and s == text:
            parses.append("json.loads")
        return real_loads(s, *args, **kwargs)

    def reads(s, *args, **kwargs):
        parses.append("nbformat.reads")
        return real_reads(s, *args, **kwargs)

    def read(f, *args, **kwargs):
        parses.append("nbformat.read")
        return real_read(f, *args, **kwargs)

    monkeypatch.setattr(json, "loads", loads)
    monkeypatch.setattr(nbformat, "reads", reads)
    monkeypatch.setattr(nbformat, "read", read)
    done = CliRunner().invoke(main, [str(path)])  # not --json: the visible tests run too
    assert done.exit_code == 0, done.output
    assert "visible tests: 3 of 3 pass" in done.output, done.output  # they were read, and ran
    assert parses == ["json.loads"], parses


def test_the_fingerprint_is_what_the_history_hashed_before(tmp_path):
    """Grading an answer again is not a new attempt: the hash the loader takes is the one
    the history took from the file (the graded code of a notebook, the text of a .py)."""
    from backprop_traps.grader.learner.after_grading import fingerprint as _fingerprint
    from backprop_traps.grader.loading.submission import load_submission
    notebook = _learners_copy(tmp_path)
    script = tmp_path / "mine.py"
    script.write_text("# question: softmax_ce\nimport numpy as np\n", encoding="utf-8")
    for path in (notebook, script):
        assert load_submission(path).fingerprint == _fingerprint(str(path))
