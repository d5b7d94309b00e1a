"""maxpool_kernel: the solution's own kernels (the learner's task is the kernel) against the
exact dx, under the simulator and the race checker (tests/kernels/conftest.py), and the
grader's launcher on planted bugs.

Loaded by path, so the same file works in this kit and in an instructor's own folder.
"""
import os
from pathlib import Path

REAL_GPU = os.environ.get("BACKPROP_TRAPS_REAL_GPU") == "1"
if not REAL_GPU:  # before numba.cuda is imported
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from backprop_traps.grader.checks.maxpool_kernel import probes  # noqa: E402
from backprop_traps.grader.loading.reference import load_solution  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ref = load_solution("maxpool_kernel", ROOT)

# (N, C, H, W, k, s): overlap with stride 1 and 2, no overlap, uncovered last rows, 1x1 windows
SHAPES = [(1, 1, 3, 3, 2, 1), (2, 2, 7, 5, 3, 1), (1, 2, 9, 8, 3, 2), (2, 1, 8, 8, 2, 2),
          (1, 2, 8, 7, 3, 2), (1, 1, 5, 4, 1, 1)]


@pytest.mark.parametrize("N, C, H, W, k, s", SHAPES, ids=["N{}C{}H{}W{}k{}s{}".format(*t) for t in SHAPES])
def test_scatter_and_gather_give_the_exact_dx(N, C, H, W, k, s):
    rng = np.random.default_rng(H * 10 + W)
    dout, argmax = probes.case(rng, (N, C, H, W), k, s, exact=True)
    expected = probes.backward(dout, argmax, (N, C, H, W))
    for backward in (ref.maxpool2d_backward_scatter, ref.maxpool2d_backward_gather):
        np.testing.assert_array_equal(backward(dout, argmax, (N, C, H, W), k, s), expected)


def test_the_gather_gives_the_same_bits_every_run_on_any_gradient():
    rng = np.random.default_rng(3)
    dout, argmax = probes.case(rng, (1, 2, 7, 7), 3, 1)  # sums of up to nine arbitrary floats
    first = ref.maxpool2d_backward_gather(dout, argmax, (1, 2, 7, 7), 3, 1)
    assert probes.wins(argmax, (1, 2, 7, 7)) > 0
    np.testing.assert_array_equal(ref.maxpool2d_backward_gather(dout, argmax, (1, 2, 7, 7), 3, 1), first)
    np.testing.assert_allclose(first, probes.backward(dout, argmax, (1, 2, 7, 7)), rtol=1e-15)


def test_the_setup_cells_forward_makes_question_01s_argmax():
    rng = np.random.default_rng(4)
    x = rng.integers(0, 3, size=(2, 2, 7, 6)).astype(np.float64)  # ties: the first maximum wins
    routing = load_solution("routing_trap", ROOT)
    for k, s in ((3, 2), (2, 1)):
        np.testing.assert_array_equal(ref.maxpool2d_forward(x, k, s)[1], routing.maxpool2d_forward(x, k, s)[1])
        np.testing.assert_array_equal(probes.argmax_of(x, k, s), routing.maxpool2d_forward(x, k, s)[1])


@pytest.mark.races_expected
@pytest.mark.skipif(REAL_GPU, reason="the grader's launcher runs learner kernels in the Numba CUDA simulator "
                                     "under the race checker; on a real GPU there is no simulator to log")
def test_the_graders_launcher_reports_a_plain_add_scatter_as_a_race_and_a_missing_guard(race_log):
    """The grader's own child's harness (probes.source_harness), run here as that child runs it:
    the kernels compiled from the source text, never taken from a namespace."""
    namespace = {"__name__": "harness"}
    exec(compile(probes.source_harness(), "<grader helpers>", "exec"), namespace)
    take, launch = namespace["_grader_take_source"], namespace["_grader_launch"]
    scatter, gather = probes.KERNELS["scatter"], probes.KERNELS["gather"]
    rng = np.random.default_rng(5)
    shape, k, s = (1, 2, 8, 8), 3, 1
    dout, argmax = probes.case(rng, shape, k, s)
    assert take([["", ref_source(), ""]]) == {scatter: None, gather: None}
    right = launch(scatter, 3, 24, [dout, argmax, np.zeros(shape)])
    assert right["error"] is None and right["flags"] == [] and right["threads"] == 72
    np.testing.assert_allclose(right["arrays"][2], probes.backward(dout, argmax, shape))
    assert probes.stray_write(right["writes"], "scatter", argmax, shape) is None

    racy_source = ref_source() + (ROOT / "tests/answers/maxpool_kernel/plain_add_scatter.py").read_text()
    assert take([["", racy_source, ""]]) == {scatter: None, gather: None}
    racy = launch(scatter, 3, 24, [dout, argmax, np.zeros(shape)])
    assert {"read-write", "write-write"} & {f["kind"] for f in racy["flags"]}
    assert all(f["array"] == "dx" for f in racy["flags"])

    take([["", ref_source() + (ROOT / "tests/answers/maxpool_kernel/no_bounds_guard.py").read_text(), ""]])
    unguarded = launch(gather, 2, 32, [dout, argmax, np.full((1, 1, 7, 9), np.nan), 3, 2])
    assert "IndexError" in unguarded["error"]


def test_the_harness_refuses_a_kernel_that_is_not_a_function_compiled_from_source(race_log):
    namespace = {"__name__": "harness"}
    exec(compile(probes.source_harness(), "<grader helpers>", "exec"), namespace)
    host = "\nclass Host:\n    def __getitem__(self, c):\n        return self\n\n" \
           "maxpool2d_backward_scatter_kernel = Host()\n"
    refused = namespace["_grader_take_source"]([["cell 3", ref_source() + host, ""]])
    assert "bound by an assignment" in refused[probes.KERNELS["scatter"]]
    assert refused[probes.KERNELS["gather"]] is None
    assert "refused" in namespace["_grader_launch"](probes.KERNELS["scatter"], 1, 8, [])


def ref_source():
    from backprop_traps.grader.loading.notebook import graded_code, parse_notebook
    from backprop_traps.grader.loading.questions import solution_path
    return graded_code(parse_notebook(solution_path("maxpool_kernel", ROOT).read_text(encoding="utf-8")))
