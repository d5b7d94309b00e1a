"""The VRAM-trap question graded end to end: right answers, each trap, the stub, and the
memory budget itself (measured in the sandbox, the way the grader measures it)."""
import math

import numpy as np
import pytest

from conftest import ANSWERS, REPO, solution_source
from backprop_traps.grader.checks import vram_trap
from backprop_traps.grader.checks.vram_trap import MEM_D, MEM_L, MEM_N, MEM_S, memory_budget
from backprop_traps.grader.engine.context import CheckContext
from backprop_traps.grader.engine.run import grade_path
from backprop_traps.grader.engine.question import Fail
from backprop_traps.grader.loading.reference import load_solution
from backprop_traps.grader.sandbox.process import CallResult, Sandbox

TRAPS = ["stores-everything", "wrong-recompute", "mask-not-packed"]
MEMORY_CHECK = next(c.name for c in vram_trap.QUESTION.checks if c.run is vram_trap.memory_budget_check)
ACTIVATION = MEM_N * MEM_D * 8


def failed(result):
    return [(t.name, t.trap, t.feedback) for t in result.tests if not t.passed]


def graded_net():
    """params, x, y of the graded size (the values do not matter for memory)."""
    return vram_trap.mlp(np.random.default_rng(0), [MEM_D] * (MEM_L + 1), MEM_N)


def test_solution_gets_full_marks():
    result = grade_path(REPO / "solutions" / "03_vram_trap.ipynb")
    assert result.error is None
    assert result.score == result.max_score > 0, failed(result)
    assert all(t.passed and t.trap is None for t in result.tests)


def test_stub_gets_zero_with_not_implemented_feedback():
    result = grade_path(REPO / "exercises" / "03_vram_trap.ipynb")
    assert result.error is None and result.score == 0
    assert all("not implemented yet" in t.feedback for t in result.tests)
    assert not any("Traceback" in t.feedback for t in result.tests)


def test_torch_checkpoint_answer_gets_full_marks():
    pytest.importorskip("torch")
    result = grade_path(ANSWERS / "vram_trap" / "torch_checkpoint.py")
    assert result.score == result.max_score, failed(result)


@pytest.mark.parametrize("trap", TRAPS)
def test_each_trap_loses_points_and_is_named(answer_file, trap):
    result = grade_path(answer_file("vram_trap", trap.replace("-", "_")))
    assert result.score < result.max_score
    named = {t.trap for t in result.tests if not t.passed}
    assert trap in named, failed(result)
    assert named <= set(TRAPS) | {None}
    if trap == "stores-everything":  # right gradients: only the memory check fails
        [memory] = [t for t in result.tests if not t.passed]
        assert memory.name == MEMORY_CHECK
        assert "gradients are right" in memory.feedback and "MiB" in memory.feedback


def test_a_float_z_kept_for_a_whole_segment_is_named_mask_not_packed(answer_file):
    """Over budget without storing every layer: a second measurement at a longer segment
    shows the float z kept per layer (the contract's "or z itself")."""
    result = grade_path(answer_file("vram_trap", "float_z_in_segment"))
    [memory] = [t for t in result.tests if not t.passed]
    assert memory.name == MEMORY_CHECK and memory.trap == "mask-not-packed", failed(result)
    assert "packed masks" in memory.feedback


def test_torch_storing_everything_is_caught_by_the_kernels_count(monkeypatch):
    """Activations kept inside torch tensors are seen: the grader reads the sandbox's peak from
    the kernel (its cgroup, or its high-water mark), whatever allocator made them."""
    pytest.importorskip("torch")
    measured, call = [], Sandbox.call

    def recording_call(self, fn, *args, **kwargs):
        result = call(self, fn, *args, **kwargs)
        if kwargs.get("measure_memory"):
            measured.append(result.memory)
        return result
    monkeypatch.setattr(Sandbox, "call", recording_call)
    result = grade_path(ANSWERS / "vram_trap" / "torch_stores_everything.py")
    assert [t.trap for t in result.tests if not t.passed] == ["stores-everything"], failed(result)
    budget = memory_budget(MEM_L, MEM_D, MEM_N, MEM_S)
    [memory] = measured
    assert memory["peak"] > 2 * budget, memory
    assert "cgroup" in memory["source"] or "high-water" in memory["source"], memory


def test_budget_fits_the_solution_at_every_segment_size_and_not_storing_everything():
    """budget(s) = (ceil(L/s) + s + 4) activations + params + grads holds the solution at every
    s from 1 to L; storing every layer input goes over budget(sqrt(L)) by more than 2x."""
    net = graded_net()
    with Sandbox(solution_source("vram_trap")) as sandbox:
        assert sandbox.start().ok
        for s in range(1, MEM_L + 1):
            peak = sandbox.call("mlp_loss_and_grads", *net, s, measure_memory=True).memory["peak"]
            budget = memory_budget(MEM_L, MEM_D, MEM_N, s)
            assert peak <= budget - ACTIVATION, (s, peak / ACTIVATION, budget / ACTIVATION)
            assert peak >= (math.ceil(MEM_L / s) + s - 2) * ACTIVATION, (s, peak / ACTIVATION)
    everything = solution_source("vram_trap") + (ANSWERS / "vram_trap" / "stores_everything.py").read_text()
    with Sandbox(everything) as sandbox:
        assert sandbox.start().ok
        peak = sandbox.call("mlp_loss_and_grads", *net, MEM_S, measure_memory=True).memory["peak"]
    assert peak > 2 * memory_budget(MEM_L, MEM_D, MEM_N, MEM_S)


def test_the_documented_budget_is_the_graded_one():
    budget = memory_budget(MEM_L, MEM_D, MEM_N, MEM_S)
    assert f"{budget:,} B" in vram_trap.__doc__
    notebook = (REPO / "solutions" / "03_vram_trap.ipynb").read_text()
    assert f"{budget:,} bytes" in notebook and f"N = {MEM_N}" in notebook


class _NoMemorySandbox:
    """Answers every call with the reference, but without a memory measurement."""

    def call(self, fn, *args, echo_args=False, measure_memory=False):
        value = getattr(load_solution("vram_trap"), fn)(*args)
        memory = {"rss_peak": None, "traced_peak": None, "peak": None,
                  "unavailable": "this platform has no /proc to read peak memory from"}
        return CallResult(True, value=value, memory=memory if measure_memory else None)


def test_memory_check_fails_where_memory_cannot_be_measured():
    ctx = CheckContext(vram_trap.QUESTION, _NoMemorySandbox(), load_solution("vram_trap"), 1, MEMORY_CHECK)
    with pytest.raises(Fail) as failure:
        vram_trap.memory_budget_check(ctx)
    assert "cannot be measured on this platform" in failure.value.feedback
    assert failure.value.trap is None


def test_seed_replays(answer_file):
    path = answer_file("vram_trap", "wrong_recompute")
    a, b = grade_path(path, seed=7), grade_path(path, seed=7)
    assert [t.to_json() for t in a.tests] == [t.to_json() for t in b.tests]


def test_a_skipped_layer_is_not_said_to_equal_a_wrong_start(answer_file):
    """A recompute that stops a layer short is named wrong-recompute by behaviour (right at
    segment_size=1): the feedback must not claim its gradients equal a wrong-start variant's."""
    result = grade_path(answer_file("vram_trap", "wrong_recompute_stops_a_layer_short", base=False))
    named = [t for t in result.tests if t.trap == "wrong-recompute"]
    assert named and not any("equal those of" in t.feedback for t in named), [t.feedback for t in named]
