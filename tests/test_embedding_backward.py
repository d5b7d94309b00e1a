"""embedding_backward is sound: full marks for the solution, 0 for the stub, every answer in
tests/answers/embedding_backward/ gets what its `# expect:` line says, no free points (`grade validate
embedding_backward --quick`; the kernels have their own test)."""
from pathlib import Path

from backprop_traps.grader.authoring.validate import validate_question

ROOT = Path(__file__).resolve().parents[1]


def test_embedding_backward_is_sound():
    report = validate_question("embedding_backward", ROOT, quick=True)
    assert report.ok, report.text()
