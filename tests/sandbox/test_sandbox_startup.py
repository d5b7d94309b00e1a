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
