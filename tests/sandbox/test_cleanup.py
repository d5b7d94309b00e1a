"""Ending a sandbox's processes (grader/sandbox/cleanup.py): the child, its session, and a
grandchild that left the session but still carries the sandbox's marker."""
import os
import subprocess
import sys
import time

from backprop_traps.grader.sandbox.cleanup import MARKER, _alive, kill_tree, pauses

ESCAPE = """
import os, sys, time
pid = os.fork()
if pid == 0:
    os.setsid()                      # out of the session and the process group
    print(os.getpid(), flush=True)
    time.sleep(60)
    os._exit(0)
time.sleep(60)
"""


def test_pauses_look_at_once_then_end_after_the_wait():
    start, looks = time.monotonic(), 0
    for _ in pauses(0.05):
        looks += 1
    spent = time.monotonic() - start
    assert looks >= 3 and 0.05 <= spent < 1.0


def test_kill_tree_ends_the_child_and_a_grandchild_that_left_its_session():
    marker = f"test-{os.getpid()}"
    child = subprocess.Popen([sys.executable, "-c", ESCAPE], stdout=subprocess.PIPE, text=True,
                             start_new_session=True, env=dict(os.environ, **{MARKER: marker}))
    try:
        grandchild = int(child.stdout.readline())
        assert _alive(child.pid) and _alive(grandchild)
        kill_tree(child.pid, marker)
        assert not _alive(child.pid) and not _alive(grandchild)
    finally:
        child.kill()
        child.wait()
