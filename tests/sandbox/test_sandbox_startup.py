"""Start-up files deferred in the child (``visibility.DEFERRED_STARTUP``): numba-cuda's
redirector is masked by bubblewrap and run at learner code's first ``import numba``, so a
child that never imports numba does not pay for it, and one that does gets numba-cuda's
``numba.cuda`` exactly as an undeferred start-up would give it."""
import pytest

from backprop_traps.grader.sandbox.process import Sandbox
from backprop_traps.grader.sandbox.visibility import deferred_startup
from test_sandbox_layers import FAST, mode  # noqa: F401 (the fixture: every isolation level)

PROBE = ("import sys\n"
         "def loaded():\n    return float('_numba_cuda_redirector' in sys.modules)\n"
         "def where():\n    import numba.cuda as c\n    return c.__file__\n")


def test_numba_cuda_is_numba_cudas_in_every_mode(mode):
    pytest.importorskip("numba_cuda")
    if "no bubblewrap" in mode:  # known, and said in the README (maxpool_kernel needs bubblewrap)
        pytest.skip("numba-cuda does not import under the Landlock fallback's rules")
    with Sandbox(PROBE, FAST) as box:
        where = box.call("where")
    assert where.ok, where.error
    assert "numba_cuda" in where.value, where.value


def test_the_redirector_loads_only_when_numba_does():
    if not any(trigger == "numba" for _, trigger, _ in deferred_startup()):
        pytest.skip("numba-cuda's redirector is not installed here")
    with Sandbox(PROBE, FAST) as box:
        before = box.call("loaded")
        where = box.call("where")
        after = box.call("loaded")
        isolation = box.isolation
    assert before.ok and where.ok and after.ok, (before.error, where.error, after.error)
    if isolation.startswith("bubblewrap"):
        assert before.value == 0.0  # masked at start-up: not loaded until numba is
    assert after.value == 1.0


def test_start_up_hooks_are_told_from_path_files(tmp_path, monkeypatch):
    """Only .pth files that are all import lines are hooks; path files, namespace packages'
    files, the kit's own and the deferred ones are left to Python's site as they are."""
    from backprop_traps.grader.sandbox import visibility
    files = {"hook.pth": "# a comment\nimport os; os.environ.get('X')\n\nimport\tsys\n",
             "paths.pth": "/opt/somewhere\n", "mixed.pth": "/opt/somewhere\nimport os\n",
             "zope-nspkg.pth": "import sys, types, os\n", "_numba_cuda_redirector.pth": "import os\n",
             "backprop_traps_old_names.pth": "import os\n", "empty.pth": "", "binary.pth": b"\xff\xfe"}
    for name, text in files.items():
        (tmp_path / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    monkeypatch.setattr(visibility.site, "getsitepackages", lambda: [str(tmp_path)])
    monkeypatch.setattr(visibility.site, "getusersitepackages", lambda: str(tmp_path / "absent"))
    visibility._startup_hooks.cache_clear()
    try:
        assert visibility.startup_hooks() == [str(tmp_path / "hook.pth")]
    finally:
        visibility._startup_hooks.cache_clear()


def test_start_up_hooks_are_masked_inside_bubblewrap():
    from backprop_traps.grader.sandbox.visibility import startup_hooks
    hooks = startup_hooks()
    if not hooks:
        pytest.skip("this installation has no start-up hooks")
    probe = "def read(path):\n    with open(path) as f:\n        return f.read()\n"
    with Sandbox(probe, FAST) as box:
        seen = [box.call("read", path) for path in hooks]
        isolation = box.isolation
    if not isolation.startswith("bubblewrap"):
        pytest.skip(f"bubblewrap cannot run here ({isolation})")
    # masked as the kit's own entries are: an empty file, or none the sandbox may open
    assert all((r.ok and r.value == "") or "PermissionError" in (r.error or "") for r in seen), \
        [(r.value, r.error) for r in seen]
