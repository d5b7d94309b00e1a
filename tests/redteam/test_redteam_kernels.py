"""Red team, issue 35 class 11: a learner's CUDA kernel graded by code the learner controls
(maxpool_kernel).

The race checker, the launcher and the device arrays used to run in the learner's process,
after the learner's module code; a scatter whose only update is a plain ``+=`` (honest score
6/12: the race is named) scored 12/12 by poisoning the checker, setting its "atomic" flag
from the kernel, or handing in anything with ``__getitem__``. Now the grader compiles the
kernels from the source text in a child of its own (grader/sandbox/source_child.py). Each
attack (``attacks/kernel_*.py``) must score at most what ``attacks/kernel_plain_add.py`` scores
in the same sandbox level, and fail the overlap check. Without bubblewrap numba-cuda does not
import under the fallback's file rules: nothing is graded there, and every check says so as
the grader's error, never the learner's.
"""
from __future__ import annotations

import shutil

import pytest

from conftest import REPO
from redteam_kit import build, grade, mode  # noqa: F401 (mode: a fixture)

OVERLAP = "scatter kernel: overlapping windows"  # the check's name starts so
RACE, REFUSED, OWNER = "[race]", "The grader compiles your kernels itself", "thread i owns"
NO_GPU = "does not compile for a GPU"  # float64 exch and cas: numba-cuda types them for integers only
KERNEL_ATTACKS = {  # attack -> what its overlap check says (with bubblewrap)
    "kernel_checker_preinstalled": RACE,    # the checker believes it is already installed
    "kernel_poison_simulator": RACE,        # atomics, array accesses, sys.modules patched first
    "kernel_jit_rebound": RACE,             # cuda.jit rebound to a host class by the module
    "kernel_atomic_flag": REFUSED,          # the checker's "atomic" flag set from the kernel
    "kernel_reads_log": REFUSED,            # the checker reached through __globals__
    "kernel_module_mutable": REFUSED,       # module-level objects the learner prepared
    "kernel_exec_import": REFUSED,          # import, exec and frames inside the kernel
    "kernel_builtins": REFUSED,             # globals(), getattr, type inside the kernel
    "kernel_getitem_object": REFUSED,       # an object with __getitem__ as the kernel
    "kernel_host_numpy_class": REFUSED,     # both kernels a host class computing dx with numpy
    "kernel_decorator_swap": REFUSED,       # a decorator that swaps the compiled kernel
    "kernel_cuda_shadowed": REFUSED,        # `cuda` itself a class of the learner's
    "kernel_rebound_after_def": REFUSED,    # a right-looking def, then the name rebound
    "kernel_exec_defined": REFUSED,         # no def at all: the names bound by exec
    "kernel_serial_thread0": OWNER,         # thread 0 does every += alone: no race to log
    "kernel_exch_rmw": NO_GPU,              # an atomic read, then an atomic exchange
    "kernel_cas_once": NO_GPU,              # an atomic read, then one compare-and-swap, no retry
}
LEVELS = ["default", "no_cgroup", "no_bwrap"]
_honest: dict[str, float] = {}


def plain_add_score(where: str, folder) -> float:
    """The honest plain-+= scatter's score in this sandbox level (once per level)."""
    if where not in _honest:
        folder.mkdir(exist_ok=True)
        _honest[where] = grade(build("kernel_plain_add", folder)).score
    return _honest[where]


def overlap_said(result) -> str:
    check = next(t for t in result.tests if t.name.startswith(OVERLAP))
    assert not check.passed
    return (f"[{check.trap}] " if check.trap else "") + check.feedback


@pytest.mark.parametrize("where", LEVELS)
@pytest.mark.parametrize("name", list(KERNEL_ATTACKS))
def test_a_kernel_attack_scores_no_more_than_a_plain_add_scatter(tmp_path, mode, name, where):
    mode(where)
    honest = plain_add_score(where, tmp_path / "honest")
    result = grade(build(name, tmp_path))
    assert result.error is None and result.max_score == 12
    assert result.score <= honest, [(t.name, t.feedback) for t in result.tests if t.passed]
    said = overlap_said(result)
    if where == "no_bwrap":
        assert honest == 0 and "Without bubblewrap numba-cuda does not import" in said
        assert all(t.grader_error for t in result.tests if not t.passed)
    else:
        assert honest == 6 and KERNEL_ATTACKS[name] in said, said


@pytest.mark.parametrize("where", LEVELS)
def test_the_solution_keeps_full_marks_and_the_fallback_says_it_cannot_grade(tmp_path, mode, where):
    mode(where)
    notebook = tmp_path / "20_maxpool_kernel.ipynb"
    shutil.copy(REPO / "solutions" / "20_maxpool_kernel.ipynb", notebook)
    result = grade(notebook)
    if where == "no_bwrap":  # the grader's error on every check, with the reason, never the learner's
        assert result.score == 0 and result.grader_error
        assert all(t.grader_error and "cannot be graded on this machine" in t.feedback for t in result.tests)
    else:
        assert result.score == 12, [(t.name, t.feedback) for t in result.tests if not t.passed]
