"""tensor_parallel_linear is sound: full marks for the solution, 0 for the stub, every answer in
tests/answers/tensor_parallel_linear/ gets what its `# expect:` line says, no free points (`grade validate
tensor_parallel_linear --quick`; the kernels have their own test)."""
from pathlib import Path

from backprop_traps.grader.authoring.validate import validate_question

ROOT = Path(__file__).resolve().parents[1]


def test_tensor_parallel_linear_is_sound():
    report = validate_question("tensor_parallel_linear", ROOT, quick=True)
    assert report.ok, report.text()
