"""The kernel benchmark without a GPU: it says so, times nothing, and its smoke pass passes.

`grade bench --simulator` runs the benchmark's no-GPU path end to end (a child process
under the simulator, tiny shapes). The GPU-only code is exercised here too, as far as a
machine without a GPU allows: PyTorch's counterpart of every kernel against the solutions
on the CPU, and the timing loop and table under the simulator, whose "times" are
meaningless and never printed.
"""
import re
import types

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import REAL_GPU
from backprop_traps.grader.commands.bench import bench as bench_command, load_benchmark

from backprop_traps.kernels import cases as kernel_cases

bench = load_benchmark()

A_BANDWIDTH = re.compile(r"\d\s*GB/s")


def test_no_gpu_run_says_so_and_prints_no_bandwidth(tmp_path, tiny_cases):
    out = tmp_path / "kernels_gpu.md"
    result = CliRunner().invoke(bench_command, ["--simulator", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "No GPU" in result.output
    text = out.read_text()
    assert "No GPU measured" in text and bench.MEASURED_MARK not in text
    for shown in (result.output, text):
        assert not A_BANDWIDTH.search(shown), "a bandwidth figure without a device"
        assert "FAIL" not in shown
    rows = {line.split(" | ")[0][2:]: line for line in text.splitlines() if line.startswith("| ")}
    for case in tiny_cases:  # every kernel, checked in float64 and float32 (question 20's: float64, its contract)
        dtypes = 1 if case.name.startswith("question 20") else 2
        assert rows[case.name].count("pass (max err") == dtypes, case.name


def test_grade_has_the_bench_subcommand():
    from backprop_traps.grader.cli import main
    assert main.get_command(None, "bench") is bench_command


def test_a_run_without_a_gpu_keeps_a_measured_file(tmp_path):
    out = tmp_path / "kernels_gpu.md"
    out.write_text(f"# measured\n{bench.MEASURED_MARK}\n| ... | 2900 GB/s |\n")
    before = out.read_text()
    bench.write("no GPU", out, measured=False)
    assert out.read_text() == before
    bench.write("a GPU table", out, measured=True)
    assert out.read_text() == "a GPU table"


@pytest.mark.skipif(REAL_GPU, reason="under BACKPROP_TRAPS_REAL_GPU=1 numba.cuda is the device")
def test_the_simulator_is_not_a_gpu():
    present, why = bench.gpu_status()
    assert not present and "simulator" in why


@pytest.fixture(scope="module")
def tiny_cases():
    return kernel_cases.build_cases("tiny", np.float64)


def test_every_kernel_has_a_case(tiny_cases):
    names = " ".join(case.name for case in tiny_cases)
    for op in ("max-pool forward + argmax", "inference only", "gather", "atomic", "avg-pool forward",
               "avg-pool backward", "conv1d forward", "backward-data", "backward-weight",
               "cross-entropy", "in place", "linear+ReLU forward", "linear+ReLU backward"):
        assert op in names
    for case in tiny_cases:
        assert case.moved_bytes() == sum(a.nbytes for a in [*case.reads.values(), *case.writes.values()])
    in_place = next(case for case in tiny_cases if "in place" in case.name)
    assert in_place.buffer_bytes() == in_place.writes["losses"].nbytes  # dlogits reuses the logits


def test_torch_counterparts_match_the_solutions_on_cpu(tiny_cases):
    """The ops the GPU run times beside each kernel compute the same thing (their arguments are right)."""
    for case in tiny_cases:
        got = {name: t.detach().numpy() for name, t in case.torch_op("cpu")().items()}
        assert set(got) <= set(case.writes), case.name  # the GPU run compares these by name
        expected = {name: value for name, value in case.expected().items() if name in got}
        assert expected, case.name
        ok, err = bench.compare(got, expected, "float64")
        assert ok, f"{case.name}: torch differs from the solution by {err}"


def test_timing_loop_and_table_run_under_the_simulator(capsys):
    """The GPU path's code runs (the simulator's events give no times: nothing is printed)."""
    cases = kernel_cases.build_cases("tiny", np.float64, questions=("routing_trap",))
    rows = bench.measure(cases, runs=2, warmup=1, copy_gbps=1.0)
    assert [r["kernel"] for r in rows] == [c.name for c in cases]
    assert bench.copy_bandwidth(1024, runs=2, warmup=1) is not None
    for r in rows:
        r.update(torch_ms=1.0, diff=0.0, torch_buffers_mb=1.0)
    table = bench.gpu_markdown("simulated", 2, 1, 1.0, rows, [], types.SimpleNamespace(__version__="x"))
    assert table.count("| max-pool") == 8 and bench.MEASURED_MARK in table  # 4 kernels, versions 1 and 2
    assert capsys.readouterr().out == ""


def test_the_rnn_reference_hands_cudnn_contiguous_weights(monkeypatch):
    """Issue 34: on a GPU, cuDNN views the RNN's weights flat, and a transposed (non-contiguous)
    W_xh.T made the bptt cases crash before anything was timed. The CPU accepts such views, so
    the weights torch.rnn_tanh gets are checked here."""
    torch = pytest.importorskip("torch")
    real = torch.rnn_tanh
    seen = []

    def checked(x, h0, params, *rest):
        seen.extend(p.is_contiguous() for p in params)
        return real(x, h0, params, *rest)

    monkeypatch.setattr(torch, "rnn_tanh", checked)
    for case in kernel_cases.build_cases("tiny", np.float32, questions=("bptt",))[:2]:
        case.torch_op("cpu")()
    assert seen and all(seen)


@pytest.mark.skipif(REAL_GPU, reason="the rehearsal runs under the simulator")
def test_a_failing_case_is_a_row_and_the_table_is_written_as_it_goes(tmp_path, monkeypatch):
    """Issue 45: one failing case aborted the run and nothing was written until the end. Now it
    is a row saying why, the next case still runs, and the file holds every row so far."""
    out = tmp_path / "table.md"
    seen = []
    real = bench.measure_one

    def flaky(case, *args):
        if not seen:
            seen.append(out.read_text())  # written before the first case was timed
            case.launch = lambda: (_ for _ in ()).throw(RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS"))
        return real(case, *args)

    monkeypatch.setattr(bench, "measure_one", flaky)
    args = types.SimpleNamespace(runs=1, warmup=0, out=out, only="", max_seconds=0)
    text, passed = bench.timed_run("the simulator", ("straight_through",), args, simulated=True)
    assert not passed and "Timing in progress" in seen[0] and "straight_through" in seen[0]
    rows = [line for line in text.splitlines() if line.startswith("| ") and "sim." in line or "FAILED" in line]
    # the failing case is a row saying why, and every later case (backward, version 2) still ran
    assert "FAILED: RuntimeError: CUDA_ERROR_ILLEGAL_ADDRESS" in rows[0], rows
    assert len(rows) >= 2 and not any("FAILED" in row for row in rows[1:]), rows
    assert out.read_text() == text and "in progress" not in text and bench.MEASURED_MARK not in text


@pytest.mark.skipif(REAL_GPU, reason="the rehearsal runs under the simulator")
def test_the_time_cap_counts_from_the_process_start(tmp_path):
    """--max-seconds counted only after the tiny checks (60-90 s on the device): a session's
    budget ran out first. It counts from the process's start now, imports and checks included."""
    assert bench.elapsed() > 0
    args = types.SimpleNamespace(runs=1, warmup=0, out=tmp_path / "t.md", only="",
                                 max_seconds=bench.elapsed() / 2)  # already spent before any check
    text, _ = bench.timed_run("the simulator", ("straight_through", "custom_function"), args, simulated=True)
    assert "| straight_through: not timed (--max-seconds" in text and "| custom_function: not timed" in text
