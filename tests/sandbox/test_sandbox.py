"""Every limit of the child process has a test here (DESIGN.md's trust boundary)."""
import os
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from backprop_traps.grader.sandbox import landlock
from backprop_traps.grader.sandbox.limits import Limits
from backprop_traps.grader.sandbox.process import Sandbox
from backprop_traps.grader.sandbox.visibility import KIT_ROOT

FAST = Limits(call_seconds=2.0, total_seconds=6.0)
needs_landlock = pytest.mark.skipif(landlock.abi_version() < 1, reason="no Landlock on this kernel")


def run(source, fn, *args, limits=FAST, **kw):
    with Sandbox(source, limits) as box:
        loaded = box.start()
        if not loaded.ok:
            return loaded, box
        return box.call(fn, *args, **kw), box


def test_values_round_trip_and_inputs_are_copies():
    x = np.arange(6.0).reshape(2, 3)
    result, _ = run("def f(x):\n    x[0, 0] = 99\n    return x * 2, (1, 'a')\n", "f", x, echo_args=True)
    assert result.ok
    out, extra = result.value
    assert out[0, 0] == 198 and extra == (1, "a")
    assert result.args_after[0][0, 0] == 99
    assert x[0, 0] == 0  # the grader's own copy never changes


def test_an_answer_in_any_byte_order_comes_back_as_it_is():
    """A long double in an explicit byte order: memoryview refuses it, and the child's reply
    died with it ("crashed the Python process"); its bytes now travel as they are."""
    source = ("import numpy as np\n"
              "def f():\n"
              "    return [np.arange(3, dtype=np.dtype(c).newbyteorder('<')) for c in 'gd']\n")
    result, _ = run(source, "f")
    assert result.ok, result.error
    assert [a.dtype.char for a in result.value] == ["g", "d"] and result.value[0].tolist() == [0, 1, 2]


def test_per_call_time_limit_and_restart():
    with Sandbox("def loop():\n    while True: pass\ndef ok():\n    return 1\n", FAST) as box:
        assert box.start().ok
        hung = box.call("loop")
        assert hung.kind == "timeout" and "did not finish within 2 s" in hung.error
        assert box.call("ok").value == 1  # a fresh child answers the next call


def test_total_time_limit():
    limits = Limits(call_seconds=1.0, total_seconds=2.5)
    with Sandbox("import time\ndef nap():\n    time.sleep(0.9)\n    return 1\n", limits) as box:
        assert box.start().ok
        kinds = [box.call("nap").kind for _ in range(5)]
    assert "budget" in kinds


def test_memory_cap_raises_memory_error():
    result, _ = run("import numpy as np\ndef big():\n    return np.ones(2 * 1024**3).sum()\n", "big",
                    limits=Limits(call_seconds=5, memory_mb=1024))
    assert not result.ok and "MemoryError" in result.error


def test_output_is_capped_and_drained():
    src = "import sys\ndef flood():\n    for _ in range(200):\n        sys.stdout.write('x' * 1_000_000)\n    return 1\n"
    result, box = run(src, "flood", limits=Limits(call_seconds=20))
    assert result.ok and result.value == 1
    assert len(box.output) < 70_000 and "more bytes dropped" in box.output


def test_what_was_printed_is_there_when_the_answer_arrives(monkeypatch):
    """The drain thread may lag behind the answer (a CI flake: ``output`` came back empty right
    after ``start``): reading ``output`` takes what the pipe still holds, every time. A drain
    thread held back makes the lag certain here."""
    from backprop_traps.grader.sandbox import channel
    real_drain = channel.Output.drain

    def late_drain(self, fd):
        time.sleep(1.0)
        real_drain(self, fd)
    monkeypatch.setattr(channel.Output, "drain", late_drain)
    code = "print('LINE-ONE')\nimport sys\nsys.stderr.write('LINE-TWO\\n')\ndef f(i):\n    print('CALL', i)\n    return i\n"
    with Sandbox(code, Limits(call_seconds=10.0)) as box:
        assert box.start().ok
        assert {"LINE-ONE", "LINE-TWO"} <= set(box.output.split())  # stdout is buffered: any order
        for i in range(40):
            assert box.call("f", i).ok
            assert box.output.rstrip().endswith(f"CALL {i}"), box.output[-80:]


def test_file_size_limit():
    src = "def write():\n    open('big.bin', 'wb').write(b'x' * (32 * 1024 * 1024))\n    return 1\n"
    result, _ = run(src, "write")
    assert not result.ok and "File too large" in result.error


def test_no_core_files_and_clean_environment():
    src = ("import os, resource\ndef info():\n"
           "    return resource.getrlimit(resource.RLIMIT_CORE)[0], os.listdir('.'), sorted(os.environ)\n")
    result, _ = run(src, "info")
    core, files, env = result.value
    assert core == 0 and files == []
    assert "HOME" in env and not any(k.startswith(("PYTHON", "VIRTUAL")) and k != "PYTHONDONTWRITEBYTECODE"
                                     for k in env)


def test_the_working_folder_is_empty_when_python_lives_under_tmp(tmp_path, monkeypatch):
    """Issue 27: a virtual environment under /tmp (as a new user makes one) was mounted into
    the sandbox's working folder, /tmp itself. Checked by hand with a real venv under /tmp
    too: tests/sandbox/test_sandbox.py passes there."""
    from backprop_traps.grader.sandbox import bwrap
    if not bwrap.probe()[0]:
        pytest.skip("no bubblewrap here: the fallback's working folder is a fresh mkdtemp")
    venv = Path(tempfile.mkdtemp(prefix="rt-venv-", dir="/tmp"))
    roots = bwrap.python_roots() + [str(venv)]
    monkeypatch.setattr(bwrap, "python_roots", lambda: roots)
    bwrap.scratch.cache_clear()
    try:
        src = "import os\ndef info():\n    return os.getcwd(), os.listdir('.'), os.listdir('/tmp')\n"
        result, _ = run(src, "info")
    finally:
        bwrap.scratch.cache_clear()
        venv.rmdir()
    cwd, files, tmp = result.value
    assert files == [] and venv.name in tmp and cwd not in roots, (cwd, files, tmp)


def test_answer_size_limit():
    src = "import numpy as np\ndef huge():\n    return np.zeros(3 * 1024 * 1024)\n"
    result, _ = run(src, "huge", limits=Limits(call_seconds=5, message_mb=16))
    assert result.kind == "bad_return" and "over the 16 MB limit" in result.error


def test_crash_is_reported_with_signal():
    result, _ = run("import ctypes\ndef boom():\n    return ctypes.string_at(0)\n", "boom")
    assert result.kind == "crash" and "SIGSEGV" in result.error


def test_object_returns_are_refused_not_unpickled(tmp_path):
    marker = tmp_path / "pwned"
    src = (f"import numpy as np, os\nclass Evil(np.ndarray):\n"
           f"    def __reduce__(self):\n        return (os.system, ('touch {marker}',))\n"
           "def f():\n    return np.arange(3.0).view(Evil), np.array([object()])\n")
    result, _ = run(src, "f")
    assert result.kind == "bad_return" and not marker.exists()
    plain, _ = run(src.replace(", np.array([object()])", ""), "f")
    assert type(plain.value) is np.ndarray and not marker.exists()


@needs_landlock
def test_child_cannot_read_the_kit_or_open_sockets():
    src = ("import os, socket\n"
           "def read(p):\n    return open(p).read()\n"
           "def connect():\n    socket.create_connection(('127.0.0.1', 9), timeout=1)\n")
    with Sandbox(src, FAST) as box:
        assert box.start().ok and "landlock-abi" in box.isolation
        for secret in ("solutions/01_routing_trap.ipynb", "grader/checks/routing_trap/__init__.py", "pyproject.toml"):
            denied = box.call("read", str(KIT_ROOT / secret))
            # bubblewrap does not mount the kit at all; Landlock alone refuses to open it
            assert not denied.ok and ("PermissionError" in denied.error or "FileNotFoundError" in denied.error), secret
        net = box.call("connect")
        # no network namespace interface (bubblewrap) or Landlock's TCP rule
        assert not net.ok and ("PermissionError" in net.error or "OSError" in net.error
                               or "ConnectionRefusedError" in net.error), net.error
        assert box.call("read", "/etc/hostname").kind == "exception"


def test_grader_survives_signals_from_the_child():
    src = "import os, signal\ndef hit():\n    os.kill(os.getppid(), signal.SIGTERM)\n    return 1\n"
    result, _ = run(src, "hit")
    # Landlock's signal scope refuses it; without Landlock the parent would be the target.
    if landlock.abi_version() >= 6:
        assert not result.ok and "PermissionError" in result.error


def test_no_process_left_behind():
    src = ("import os, time\n"
           "def orphan():\n"
           "    if os.fork() == 0:\n"
           "        os.setsid()\n"
           "        if os.fork() == 0:\n"
           "            time.sleep(300)\n"
           "        os._exit(0)\n"
           "    return 1\n")
    result, box = run(src, "orphan")
    assert result.ok
    assert sandbox_processes() == []


def sandbox_processes():
    """Live processes started by this test process's sandboxes (other runs' are not ours)."""
    needle = f"BACKPROP_TRAPS_SANDBOX={os.getpid()}-".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if needle in f.read():
                        found.append(int(entry))
            except OSError:
                pass
    return found


@needs_landlock
def test_child_cannot_import_the_grader_even_through_the_editable_finder():
    src = ("def imp(name):\n    import importlib\n    try:\n        importlib.import_module(name)\n"
           "        return 'imported'\n    except (ImportError, OSError) as e:\n        return type(e).__name__\n")
    with Sandbox(src, FAST) as box:
        assert box.start().ok
        for name in ("grader", "kernels.routing_trap", "backprop_traps.grader.checks.routing_trap",  # old import name
                     "backprop_traps.grader.loading.reference", "backprop_traps.kernels.routing_trap"):
            assert box.call("imp", name).value != "imported", name


@needs_landlock
def test_child_cannot_read_other_processes_proc_entries():
    src = ("import os\ndef peek(pid):\n    try:\n        return open(f'/proc/{pid}/environ', 'rb').read()[:20]\n"
           "    except OSError as e:\n        return type(e).__name__\n"
           "def mine():\n    return len(open('/proc/self/status').read()) > 0\n")
    with Sandbox(src, FAST) as box:
        assert box.start().ok
        # Another PID namespace (not there at all) or Landlock (not allowed to open it)
        assert box.call("peek", os.getpid()).value in ("PermissionError", "FileNotFoundError")
        assert box.call("peek", 1).value in ("PermissionError", "FileNotFoundError")
        assert box.call("mine").value is True
