"""Every kernel file's __main__ (kernels/self_check.py): it checks its kernels against the
solution notebook and times them; the same pass, in process, under the simulator."""
import pytest

from kernels import self_check


@pytest.mark.parametrize("question", ["straight_through", "forward_vs_reverse"])
def test_a_kernel_files_main_checks_its_kernels_against_the_solution(question, capsys):
    assert self_check.main(question, runs=1) == 0
    out = capsys.readouterr().out
    assert "the Numba CUDA simulator" in out and "FAIL" not in out
    assert out.count(" ok ") >= 4  # two kernels, two dtypes


def test_every_kernel_file_has_the_plan():
    from pathlib import Path
    for path in sorted((Path(self_check.__file__).parent).glob("*.py")):
        if path.stem in ("race_checker", "self_check", "row_reduction"):
            continue
        text = path.read_text()
        assert f"python -m kernels.{path.stem}" in text, path.name  # how to run it, in its header
        assert text.rstrip().endswith(f'sys.exit(main("{path.stem}"))'), path.name  # its __main__
