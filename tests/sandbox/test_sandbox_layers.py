"""The sandbox's layers one by one: the bounded wire format, inert learner text, the import
baseline, the memory meters in each mode (the cgroup's; a course's refusal and a learner's
practice meter where there is none), and `grade doctor`.

The meter tests run on whatever this machine has: ``MODES`` switches layers off; a mode this
machine cannot give (no bubblewrap, no cgroup at all) skips with the reason."""
import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from backprop_traps.grader.cli import main
from backprop_traps.grader.sandbox import bwrap, wire
from backprop_traps.grader.sandbox.imports import import_lines
from backprop_traps.grader.sandbox.inert import inert
from backprop_traps.grader.sandbox.limits import Limits
from backprop_traps.grader.sandbox.process import Sandbox

FAST = Limits(call_seconds=8.0, total_seconds=30.0)
MODES = {"bubblewrap + cgroup": {}, "no cgroup": {"BACKPROP_TRAPS_NO_CGROUP": "1"},
         "no bubblewrap": {"BACKPROP_TRAPS_NO_BWRAP": "1"},
         "no bubblewrap, no cgroup": {"BACKPROP_TRAPS_NO_BWRAP": "1", "BACKPROP_TRAPS_NO_CGROUP": "1"}}


@pytest.fixture(params=sorted(MODES))
def mode(request, monkeypatch):
    """Each isolation level this machine can be put in (CI runs as root: all of them); one this
    machine lacks skips, saying what is missing."""
    from backprop_traps.grader.sandbox import cgroup
    for key, value in MODES[request.param].items():
        monkeypatch.setenv(key, value)
    bwrap.probe.cache_clear()
    if "no bubblewrap" not in request.param and not bwrap.probe()[0]:
        pytest.skip(f"bubblewrap cannot run here: {bwrap.probe()[1]}")
    if "no cgroup" not in request.param and not cgroup.available()[0]:
        pytest.skip(f"no cgroup for the grader here: {cgroup.available()[1]}")
    yield request.param
    bwrap.probe.cache_clear()


# -- the wire format is bounded --------------------------------------------------------
def frame_body(header: bytes, blobs=()) -> bytes:
    out = wire._LEN.pack(len(header)) + header
    for blob in blobs:
        out += wire._LEN.pack(len(blob)) + blob
    return out


def test_wide_json_is_refused_before_it_is_built():
    header = b'{"msg": [' + b"[]," * 300_000 + b'[]], "arrays": 0}'
    with pytest.raises(wire.WireError, match="more than"):
        wire.decode(frame_body(header))


def test_oversized_json_part_is_refused():
    header = b'{"msg": "' + b"x" * (wire.MAX_HEADER + 1) + b'", "arrays": 0}'
    with pytest.raises(wire.WireError, match="JSON part"):
        wire.decode(frame_body(header))


def test_npy_header_claiming_2_to_the_40_elements_is_refused_not_allocated():
    import io
    blob = io.BytesIO()
    np.lib.format.write_array_header_1_0(blob, {"descr": "<f8", "fortran_order": False,
                                                "shape": (2 ** 40,)})
    header = json.dumps({"msg": {"__nd__": 0}, "arrays": 1}).encode()
    with pytest.raises(wire.WireError, match="does not match"):
        wire.decode(frame_body(header, [blob.getvalue() + b"\0" * 64]))


def test_frame_length_over_the_limit_is_refused_unread():
    reads = []
    head = wire._LEN.pack(2 ** 60)
    with pytest.raises(wire.WireError, match="over"):
        wire.read_frame_body(lambda n: reads.append(n) or head[:n], 1 << 20)
    assert reads == [8]


def test_arrays_round_trip_with_their_layout_and_dtype():
    msg = {"a": np.arange(6.0).reshape(2, 3), "i": np.array([1, 2], dtype=np.int64),
           "z": np.array(3.0), "e": np.zeros((2, 0)), "t": (1, "x", None)}
    back = wire.decode(wire.encode(msg)[8:])
    assert back["a"].shape == (2, 3) and back["i"].dtype == np.int64 and back["z"].shape == ()
    assert back["e"].shape == (2, 0) and back["t"] == (1, "x", None)
    assert back["a"].flags.writeable and back["a"].flags.owndata


# -- learner text ----------------------------------------------------------------------
def test_inert_escapes_controls_newlines_and_bidi():
    text = inert("boom\n  PASS 2/2\x1b[2K\x1b[1A\r\u202eevil")
    assert "\n" not in text and "\x1b" not in text and "\r" not in text and "\u202e" not in text
    assert "\\x1b" in text and "\\n" in text
    assert inert("a\nb", keep_newlines=True) == "a\nb"


# -- the import baseline -----------------------------------------------------------------
def test_import_lines_keep_only_imports_and_survive_magics():
    code = import_lines(["from __future__ import annotations\nimport numpy as np\nx = np.ones(10**9)\n",
                         "%%time\nimport os\n", "from . import nothing\nimport json as j\n"])
    assert "import numpy as np" in code and "import json as j" in code
    assert "np.ones(10**9)" not in code and "__future__" not in code and "from ." not in code
    compile(code, "<imports>", "exec")


# -- the meter, in every mode -----------------------------------------------------------------
GROW = ("import numpy as np\n"
        "def grow(mb):\n    a = np.ones(int(mb) * 131072)\n    return float(a.sum())\n"
        "def nothing(mb):\n    return 0.0\n")


def expected_meter(mode: str, practice: bool) -> str:
    """What labels a measured call in ``mode``: the cgroup, the practice meter, or none."""
    from backprop_traps.grader.sandbox import cgroup
    from backprop_traps.grader.sandbox.measure import COURSE_LABEL, PRACTICE
    if "no cgroup" not in mode:
        return f"cgroup v{cgroup.available()[0]}: tamper-proof"
    return PRACTICE if practice else COURSE_LABEL


@pytest.mark.parametrize("practice", [False, True], ids=["course", "practice"])
def test_peak_memory_is_read_by_the_grader_in_every_mode(mode, practice):
    with Sandbox(GROW, FAST, practice=practice) as box:
        big = box.call("grow", 64, measure_memory=True)
        small = box.call("nothing", 64, measure_memory=True)
        label = box.memory_meter
    assert big.ok and small.ok, (big.error, small.error)
    assert label == big.memory["meter"] == expected_meter(mode, practice), (mode, big.memory)
    if "no cgroup" in mode and not practice:  # no tamper-proof meter in a course: no number, and why
        assert big.memory["peak"] is None and "tamper-proof" in big.memory["unavailable"], big.memory
        assert "course" in big.memory["unavailable"] and "switched off" in big.memory["unavailable"]
        return
    assert big.memory["peak"] is not None, big.memory
    assert 60 * 2 ** 20 < big.memory["peak"] < 80 * 2 ** 20, (mode, big.memory)
    assert small.memory["peak"] < 8 * 2 ** 20, (mode, small.memory)


@pytest.mark.parametrize("practice", [False, True], ids=["course", "practice"])
def test_memory_held_from_load_time_counts(mode, practice):
    pool = "import numpy as np\nPOOL = np.ones(64 * 131072)\ndef use(mb):\n    POOL[:] = 2.0\n    return 1.0\n"
    with Sandbox(pool, FAST, practice=practice) as box:
        used = box.call("use", 1, measure_memory=True)
    assert used.ok and (used.memory["peak"] is None if "no cgroup" in mode and not practice
                        else used.memory["peak"] > 60 * 2 ** 20), (mode, used.memory)


def test_a_forked_helper_cannot_hide_memory(mode):
    src = ("import os, numpy as np\n"
           "def forked(mb):\n"
           "    try:\n        pid = os.fork()\n    except OSError:\n        return -1.0\n"
           "    if pid == 0:\n        a = np.ones(int(mb) * 131072)\n        os._exit(0)\n"
           "    os.waitpid(pid, 0)\n    return 1.0\n")
    with Sandbox(src, FAST) as box:
        result = box.call("forked", 64, measure_memory=True)
    assert result.ok
    if result.value == -1.0:  # refused (no PID namespace, or no cgroup counts it): nothing to hide
        assert mode != "bubblewrap + cgroup", "a sandbox whose cgroup counts every process may fork"
    else:
        assert result.memory["peak"] > 60 * 2 ** 20, (mode, result.memory)


def test_isolation_says_which_layers_ran(mode):
    with Sandbox("x = 1\n", FAST) as box:
        assert box.start().ok
        assert ("no bubblewrap" in box.isolation) == ("no bubblewrap" in mode), box.isolation
        assert ("cgroup" in box.isolation) == ("no cgroup" not in mode), box.isolation
    with Sandbox("x = 1\n", FAST, practice=True) as box:
        assert box.start().ok
        assert ("practice meter: not tamper-proof" in box.isolation) == ("no cgroup" in mode), box.isolation


def test_keyrings_are_refused():
    src = ("import ctypes\n"
           "def add():\n    libc = ctypes.CDLL(None, use_errno=True)\n"
           "    r = libc.syscall(248, b'user', b'note', b'hi', 2, -3)\n"  # add_key -> session keyring
           "    return int(r), ctypes.get_errno()\n")
    with Sandbox(src, FAST) as box:
        result = box.call("add")
    assert result.ok and result.value[0] == -1, result.value


def test_doctor_lists_every_layer():
    out = CliRunner().invoke(main, ["doctor"])
    assert out.exit_code == 0
    for layer in ("bubblewrap", "cgroup", "seccomp", "Landlock"):
        assert layer in out.output


def test_doctor_says_what_is_missing(monkeypatch):
    monkeypatch.setenv("BACKPROP_TRAPS_NO_BWRAP", "1")
    bwrap.probe.cache_clear()
    try:
        out = CliRunner().invoke(main, ["doctor"])
    finally:
        bwrap.probe.cache_clear()
    assert "NO" in out.output and "without it" in out.output and "bubblewrap namespaces" in out.output


def test_doctor_never_says_every_layer_is_in_place_beside_a_no(monkeypatch):
    """Issue 27: "NO unprivileged grader" was followed by "Every layer is in place"."""
    out = CliRunner().invoke(main, ["doctor"]).output
    assert not ("NO " in out and "Every sandbox layer is in place" in out), out
    assert "unprivileged grader" not in out or os.geteuid() != 0


def test_doctor_says_when_memory_gives_no_points(monkeypatch):
    monkeypatch.setenv("BACKPROP_TRAPS_NO_CGROUP", "1")
    out = CliRunner().invoke(main, ["doctor"]).output
    assert "Memory: NOT measured" in out and "no points" in out, out
    assert "In a course" in out and "practice meter: not tamper-proof" in out, out


def test_doctor_says_which_version_subtree_and_controllers_it_uses():
    from backprop_traps.grader.sandbox import cgroup
    version, detail = cgroup.available()
    if not version:
        pytest.skip(f"no cgroup for the grader here: {detail}")
    out = CliRunner().invoke(main, ["doctor"]).output
    place = cgroup.placement()
    assert f"cgroup v{version}" in out and str(place.memory) in out and "controllers memory" in out, out
    assert "Memory: measured tamper-proof" in out, out


def test_once_bwrap_worked_a_failure_is_that_sandboxs_not_a_silent_fall_back(monkeypatch, tmp_path):
    """Issue 23, class 4: a sandbox that bwrap cannot start (something another used up) gets an
    error; the grading process keeps bubblewrap for every later sandbox."""
    with Sandbox("def f():\n    return 2.0\n", FAST) as box:
        if not box.call("f").ok or not box.isolation.startswith("bubblewrap"):
            pytest.skip(f"bubblewrap does not run here: {box.isolation}")
    real = bwrap.executable()
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: creating new namespace failed: No space left on device' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(bwrap, "executable", lambda: str(fake))
    monkeypatch.setattr(bwrap, "_broken", [])
    with Sandbox("def f():\n    return 2.0\n", FAST) as box:
        failed = box.call("f")
    assert not failed.ok and failed.kind == "crash" and "could not start" in failed.error, failed
    assert not bwrap._broken and bwrap.usable()
    monkeypatch.setattr(bwrap, "executable", lambda: real)
    with Sandbox("def f():\n    return 2.0\n", FAST) as box:
        assert box.call("f").ok and box.isolation.startswith("bubblewrap"), box.isolation


def test_a_cgroup_that_cannot_be_made_stops_the_sandbox_not_the_meter(monkeypatch):
    from backprop_traps.grader.sandbox import cgroup
    if not cgroup.available()[0]:
        pytest.skip("no cgroup here")

    def full(*_):
        raise cgroup.CgroupError(28, "the sandbox's cgroup could not be made (No space left on device)")
    monkeypatch.setattr(cgroup, "create", full)
    with Sandbox("def f():\n    return 2.0\n", FAST) as box:
        result = box.call("f", measure_memory=True)
    assert not result.ok and result.kind == "crash" and "cgroup" in result.error, result


def test_an_inner_layer_once_in_place_is_never_silently_dropped():
    from backprop_traps.grader.sandbox.lost_layers import layers_lost
    assert layers_lost("seccomp, landlock-abi-7") == ""
    assert "landlock" in layers_lost("seccomp, no landlock (ENOMEM)")
    assert "seccomp" in layers_lost("no seccomp (OSError), landlock-abi-7")


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="syscall number for x86_64")
def test_no_cgroup_fallback_refuses_fork(monkeypatch):
    monkeypatch.setenv("BACKPROP_TRAPS_NO_CGROUP", "1")
    src = ("import os\ndef f():\n    try:\n        pid = os.fork()\n    except OSError as e:\n        return e.errno\n"
           "    if pid == 0:\n        os._exit(0)\n    return 0\n")
    with Sandbox(src, FAST) as box:
        result = box.call("f")
    assert result.ok and result.value == 1  # EPERM


def test_a_bwrap_that_cannot_make_sandboxes_falls_back_and_says_why(monkeypatch, tmp_path):
    """Where user namespaces are blocked, bwrap exits at once: grading goes on without it."""
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(bwrap, "executable", lambda: str(fake))
    monkeypatch.setattr(bwrap, "_broken", [])
    monkeypatch.setattr(bwrap, "_worked", [])  # as in a process that never had bwrap work
    with Sandbox("def f():\n    return 2.0\n", FAST) as box:
        result = box.call("f")
        assert result.ok and result.value == 2.0
        assert box.isolation.startswith("no bubblewrap"), box.isolation
    assert "Permission denied" in bwrap._broken[0]


def test_without_bwrap_the_working_folder_is_on_a_tmpfs_and_a_dead_graders_is_reaped(monkeypatch):
    """Hunt: without bubblewrap the working folder was on the host's disk (capped files, one
    after another, could fill it). Now it is on /dev/shm, charged to the sandbox's cgroup;
    one a killed grader left there (holding memory until reboot) is removed."""
    from backprop_traps.grader.sandbox import cgroup, process
    if process._MEMORY_BACKED is None or not cgroup.available()[0]:
        pytest.skip("no tmpfs at /dev/shm, or no cgroup: then the sandbox has no writable folder")
    monkeypatch.setenv("BACKPROP_TRAPS_NO_BWRAP", "1")
    stale = os.path.join(process._MEMORY_BACKED, "bpt-sandbox-999999999-left")
    os.makedirs(stale, exist_ok=True)
    with Sandbox("import os\ndef f():\n    return os.getcwd()\n", FAST) as box:
        cwd = box.call("f").value
    assert cwd.startswith(process._MEMORY_BACKED + "/bpt-sandbox-") and not os.path.exists(cwd)
    assert not os.path.exists(stale)


def test_the_host_running_out_of_memory_kills_a_sandbox_first(mode):
    """Hunt: several sandboxes at their memory cap can exhaust the host; the kernel's OOM killer
    then picks the sandbox (oom_score_adj 1000; without privileges it cannot go below the
    grader's 0), not the grader."""
    with Sandbox("import os\ndef me():\n    return open('/proc/self/oom_score_adj').read().strip()\n", FAST) as box:
        result = box.call("me")
    assert result.ok and result.value == "1000", (mode, result)
