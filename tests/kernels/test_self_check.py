"""Every kernel file's __main__ (kernels/self_check.py): it checks its kernels against the
solution notebook and times them; the same pass, in process, under the simulator."""
import pytest

from backprop_traps.kernels import self_check


@pytest.mark.parametrize("question", ["straight_through", "forward_vs_reverse"])
def test_a_kernel_files_main_checks_its_kernels_against_the_solution(question, capsys):
    assert self_check.main(question, runs=1) == 0
    out = capsys.readouterr().out
    assert "the Numba CUDA simulator" in out and "FAIL" not in out
    assert out.count(" ok ") >= 4  # two kernels, two dtypes


# Questions 01-14's kernel files (issue 29); those of 15-19 came later with mains of their own.
PLANNED = ("attention_backward", "forward_vs_reverse", "grad_accumulation", "layernorm_backward", "loss_scaling",
           "mlp_backprop", "per_step_update_trap", "reparameterisation", "routing_trap", "softmax_ce",
           "straight_through", "vram_trap")


def test_every_kernel_file_has_the_plan():
    from pathlib import Path
    for path in (Path(self_check.__file__).parent / f"{name}.py" for name in PLANNED):
        text = path.read_text()
        assert f"python -m backprop_traps.kernels.{path.stem}" in text, path.name  # how to run it, in its header
        assert text.rstrip().endswith(f'sys.exit(main("{path.stem}"))'), path.name  # its __main__


def test_an_in_place_kernel_is_checked_on_fresh_inputs_however_many_timed_runs():
    # the fused softmax-CE overwrites its logits: timing it again must not change what is compared
    assert self_check.main("softmax_ce", runs=2) == 0
