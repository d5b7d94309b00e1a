"""maxpool_kernel is sound: full marks for the solution, 0 for the stub, every answer in
tests/answers/maxpool_kernel/ gets what its `# expect:` line says, no free points (`grade validate
maxpool_kernel --quick`; the kernels have their own test)."""
from pathlib import Path

from backprop_traps.grader.authoring.validate import validate_question

ROOT = Path(__file__).resolve().parents[2]


def test_maxpool_kernel_is_sound():
    report = validate_question("maxpool_kernel", ROOT, quick=True)
    assert report.ok, report.text()
