"""The race and barrier checker (kernels/race_checker.py) over every kernel test.

Each test under tests/kernels runs inside ``race_checker.checking()``: every simulated launch
logs each thread's global and shared accesses, and a test whose kernels race, diverge at a
barrier, read shared memory before it is written or index below zero fails at teardown with
what was found. A test that plants such a bug on purpose marks itself ``races_expected`` and
reads the flags from the ``race_log`` fixture. Off on a real GPU (BACKPROP_TRAPS_REAL_GPU=1),
and with BACKPROP_TRAPS_NO_RACE_CHECK=1 (to time the tests without it).
"""
import os

import pytest

REAL_GPU = os.environ.get("BACKPROP_TRAPS_REAL_GPU") == "1"  # as tests/conftest.py reads it
# BACKPROP_TRAPS_NO_RACE_CHECK=1 runs the kernel tests without the checker (to measure its cost)
CHECKING = not REAL_GPU and os.environ.get("BACKPROP_TRAPS_NO_RACE_CHECK") != "1"

from kernels import race_checker  # noqa: E402 (imports numpy only; install() patches the simulator)

if CHECKING:
    race_checker.install()


def pytest_configure(config):
    config.addinivalue_line("markers", "races_expected: the test plants a race or barrier bug on purpose")


@pytest.fixture(autouse=True)
def race_log(request):
    """The checker's Log for this test (None on a real GPU)."""
    if not CHECKING:
        yield None
        return
    with race_checker.checking() as log:
        yield log
    if log.flags and request.node.get_closest_marker("races_expected") is None:
        pytest.fail("the race checker flagged this test's kernels:\n"
                    + "\n".join(f"  [{f['kind']}] {f['message']}" for f in log.flags[:10]), pytrace=False)
