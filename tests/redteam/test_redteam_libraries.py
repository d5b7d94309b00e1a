"""Issue 35, class 6: an honest library works in the sandbox as it does outside it, and when the
sandbox itself breaks one, that is the grader's error, never the learner's exception.

- Every question's torch-based right answer (tests/answers/*/torch_*.py) gets full marks in
  the sandbox, and torch's float32 AdamW with its own float16 cast (the issue's answer, which
  needs cpuinfo: /proc/cpuinfo and /sys/devices/system/cpu) in every layer that can import torch.
- A library the sandbox breaks (cpuinfo without the machine's description, asyncio under the
  fallback's seccomp filter, torch's import without a writable folder) is reported as the
  grader's error (`grader_error`, BUG), in the modes where it happens.
- The learner's own exceptions stay the learner's: a `raise`, an `open` of a denied file in
  their own code, a PermissionError they raise themselves.
"""
import errno
import re
from pathlib import Path

import pytest

from conftest import ANSWERS
from backprop_traps.grader.engine.run import grade_path
from backprop_traps.grader.sandbox.limits import Limits
from backprop_traps.grader.sandbox.refusals import refused_by_sandbox
from redteam_kit import mode  # noqa: F401 (fixture)

torch = pytest.importorskip("torch")
FLOAT32_ADAMW = ANSWERS / "adamw_step" / "torch_float32_master.py"
LIMITS = Limits(call_seconds=10.0, total_seconds=60.0)


def torch_answers() -> dict[str, Path]:
    """One right torch-based answer per question that has one: ``torch_*.py`` that is the
    question's torch_answer.py or says it must get full marks."""
    found = {}
    for path in sorted(ANSWERS.glob("*/torch_*.py")):
        said = " ".join(line.lstrip("# ") for line in path.read_text(encoding="utf-8").splitlines()[:8])
        if path.name == "torch_answer.py" or "must get full marks" in said:
            found.setdefault(path.parent.name, path)
    return found


def test_every_question_with_a_torch_answer_is_covered():
    have = {p.parent.name for p in ANSWERS.glob("*/torch_*.py")}
    assert have == set(torch_answers()) and len(have) >= 19


@pytest.mark.parametrize("question", sorted(torch_answers()))
def test_a_torch_answer_gets_full_marks_in_the_sandbox(mode, question):
    mode("default")
    result = grade_path(torch_answers()[question], question=question, limits=LIMITS)
    broken = [(t.name, t.feedback[:300]) for t in result.tests if not t.passed]
    assert result.score == result.max_score > 0 and not result.grader_error, broken or result.error


@pytest.mark.parametrize("sandbox", ["default", "no_bwrap", "no_cgroup"])
def test_torchs_float32_adamw_and_float16_cast_work_in_every_layer_that_imports_torch(mode, sandbox):
    mode(sandbox)
    result = grade_path(FLOAT32_ADAMW, limits=LIMITS)
    assert result.score == result.max_score and not result.grader_error, \
        [(t.name, t.feedback[:300]) for t in result.tests if not t.passed]


# -- the sandbox's doing is the grader's error ----------------------------------------------
def test_cpuinfo_without_the_machines_description_is_the_graders_error(mode, monkeypatch):
    """The bug of the issue, put back: torch's cpuinfo fails, and the checks it breaks say BUG."""
    from backprop_traps.grader.sandbox import bwrap
    mode("default")
    monkeypatch.setattr(bwrap, "SYSTEM_INFO", ())
    result = grade_path(FLOAT32_ADAMW, limits=LIMITS)
    broken = [t for t in result.tests if not t.passed]
    assert broken and all(t.grader_error for t in broken) and result.grader_error
    assert "cpuinfo" in broken[0].feedback and "not your code" in broken[0].feedback
    assert sum(t.points for t in result.tests) == result.score > 0  # the rest is graded as usual


def test_a_refused_system_call_inside_a_library_is_the_graders_error(mode, tmp_path):
    """Without bubblewrap, seccomp refuses epoll: asyncio's event loop cannot be made."""
    mode("no_bwrap")
    path = tmp_path / "answer.py"
    path.write_text("# question: softmax_ce\nimport numpy as np\n\n"
                    "def softmax_cross_entropy(logits, labels):\n"
                    "    import asyncio\n    asyncio.new_event_loop()\n\n"
                    "def softmax_jacobian(z):\n    raise RuntimeError('my own bug')\n")
    result = grade_path(path, limits=LIMITS)
    by_name = {t.name: t for t in result.tests}
    loss = next(t for name, t in by_name.items() if name.startswith("loss and dlogits"))
    assert loss.grader_error and "refused" in loss.feedback
    jacobian = next(t for name, t in by_name.items() if name.startswith("softmax_jacobian"))
    assert not jacobian.grader_error and "my own bug" in jacobian.feedback


def test_torch_without_a_writable_folder_is_the_graders_error(mode):
    """The no-bubblewrap, no-cgroup level gives no writable folder at all: torch cannot import.
    The answer is not graded, and no check blames it."""
    mode("no_bwrap_no_cgroup")
    result = grade_path(ANSWERS / "routing_trap" / "torch_answer.py", limits=LIMITS)
    assert result.tests and all(t.grader_error for t in result.tests)
    assert "writable temporary folder" in result.tests[0].feedback


# -- the learner's own exception stays the learner's ---------------------------------------
@pytest.mark.parametrize("sandbox", ["default", "no_bwrap"])
def test_the_learners_own_exceptions_stay_the_learners(mode, tmp_path, sandbox):
    mode(sandbox)
    path = tmp_path / "answer.py"
    path.write_text("# question: softmax_ce\n\n"
                    "def softmax_cross_entropy(logits, labels):\n"
                    "    open('/sys/devices/system/node/online').read()  # denied, in their own code\n\n"
                    "def softmax_jacobian(z):\n"
                    "    raise PermissionError(13, 'Permission denied', '/sys/devices/system/cpu/x')\n")
    result = grade_path(path, limits=LIMITS)
    assert result.score == 0 and not result.grader_error
    assert any("/sys/devices/system/node/online" in t.feedback for t in result.tests)


# -- the rule itself ---------------------------------------------------------------------------
@pytest.mark.parametrize("error, theirs", [
    ({"type": "RuntimeError", "message": "Failed to initialize cpuinfo!", "library": False}, False),
    ({"type": "RuntimeError", "message": "boom", "library": True}, True),
    ({"type": "PermissionError", "errno": errno.EPERM, "filename": None, "library": True}, False),
    ({"type": "PermissionError", "errno": errno.EPERM, "filename": None, "library": False}, True),
    ({"type": "PermissionError", "errno": errno.EACCES, "filename": "/sys/devices/x", "library": True}, False),
    ({"type": "PermissionError", "errno": errno.EACCES, "filename": "/sys/devices/x", "library": False}, True),
    ({"type": "PermissionError", "errno": errno.EACCES, "filename": "/home/me/data.npy", "library": True}, True),
    ({"type": "FileNotFoundError", "errno": errno.ENOENT, "filename": "/etc/hostname", "library": True}, False),
    ({"type": "FileNotFoundError", "errno": errno.ENOENT, "filename": "/etc/no-such-file", "library": True}, True),
    ({"type": "FileNotFoundError", "errno": errno.ENOENT, "filename": "/proc/1/maps", "library": True}, True),
    (None, True), ("junk", True),
])
def test_what_counts_as_the_sandboxs_doing(error, theirs):
    assert (refused_by_sandbox(error, host_has=lambda p: p == "/etc/hostname" or p.startswith("/proc/"))
            is None) == theirs
