"""nbgrader's autograde kernel, inside the same sandbox as `grade`.

Under ``nbgrader autograde`` every cell of a learner's notebook runs in a Jupyter kernel
before anything grades it. A plain kernel runs them as the instructor, beside the course's
secret and the gradebook. Here the kernel is ``python -m ipykernel_launcher`` started under
bubblewrap with the sandbox's own layers (``backprop_traps.grader.sandbox.bwrap.arguments``: its own user,
PID, network, IPC and mount namespaces, no capabilities, the seccomp filter, read-only
Python and system folders with the kit masked, a private size-capped ``/tmp``, a clean
environment), the grader's rlimits and, where the grader may make one, a cgroup capping
the whole kernel's memory and processes. Besides those it sees only the notebook's own
folder (read-only) and the folder of the kernel's sockets.

The kernel's network namespace has no route to the host, so it talks to nbgrader over
ZeroMQ's ``ipc`` transport: unix sockets in a private folder that both sides see. The
manager (``SandboxedKernelManager``) picks that transport and folder; the launcher
(``python -m backprop_traps.grader.batch.nbgrader_kernel -f CONNECTION_FILE``) refuses any other.

Where bubblewrap cannot run, the kernel falls back to the worker's own fallback layers:
Landlock (read-only Python and system folders, writes only in its sockets' folder and a
private temp folder) and rlimits. Where neither exists the launcher refuses to start: a
course is better off with a failed autograde than with learner cells run unconfined.
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import sys
import tempfile

from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager
from traitlets import default

from backprop_traps.grader.sandbox.limits import Limits

KERNEL_LIMITS = Limits()
DISPLAY_NAME = "Python (backprop-traps sandbox)"


def kernel_spec() -> KernelSpec:
    """The kernel spec the manager launches: this module, not ipykernel directly."""
    return KernelSpec(argv=[sys.executable, "-m", "backprop_traps.grader.batch.nbgrader_kernel", "-f", "{connection_file}"],
                      display_name=DISPLAY_NAME, language="python", interrupt_mode="message",
                      metadata={"debugger": False})


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernels run in the sandbox and talk over private unix sockets."""

    @default("transport")
    def _default_transport(self):
        return "ipc"

    @default("ip")
    def _default_ip(self):
        self._socket_dir = tempfile.mkdtemp(prefix="bpt-kernel-")  # 0700: ours alone
        return os.path.join(self._socket_dir, "kernel")

    @property
    def kernel_spec(self):
        return kernel_spec()

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        folder = getattr(self, "_socket_dir", None)
        if folder and not restart:
            shutil.rmtree(folder, ignore_errors=True)


def _environment(home: str) -> dict:
    return {"PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
            "IPYTHONDIR": os.path.join(home, ".ipython"), "JUPYTER_RUNTIME_DIR": home,
            "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1", "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NBGRADER_EXECUTION": "autograde"}


def _set_limits(limits: Limits = KERNEL_LIMITS) -> None:
    """The grader's per-process caps, inherited by everything the kernel starts."""
    mb = 1024 * 1024
    for name, value in (("RLIMIT_AS", limits.memory_mb * mb), ("RLIMIT_CORE", 0),
                        ("RLIMIT_FSIZE", limits.file_mb * mb), ("RLIMIT_NOFILE", 1024), ("RLIMIT_RTPRIO", 0)):
        which = getattr(resource, name)
        soft, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))


def _connection(argv: list[str]) -> tuple[str, dict]:
    if "-f" not in argv or argv.index("-f") + 1 >= len(argv):
        raise SystemExit("usage: python -m backprop_traps.grader.batch.nbgrader_kernel -f CONNECTION_FILE [ipykernel options]")
    path = argv[argv.index("-f") + 1]
    with open(path, encoding="utf-8") as f:
        info = json.load(f)
    if info.get("transport") != "ipc" or not os.path.isabs(str(info.get("ip", ""))):
        raise SystemExit("the sandboxed kernel talks over unix sockets only: start it with "
                         "backprop_traps.grader.batch.nbgrader_kernel.SandboxedKernelManager (see docs/authoring.md)")
    return path, info


SCHEDULING = ("sched_setscheduler", "sched_setparam", "sched_setattr")
"""Refused by the grader's filter, but ZeroMQ's I/O thread sets its (ordinary) scheduling
policy and aborts when refused. In the sandbox they are harmless: no capabilities, no
real-time priority (RLIMIT_RTPRIO 0), and only the sandbox's own processes in reach."""


def _seccomp_program() -> bytes | None:
    """The sandbox's filter (``backprop_traps.grader.sandbox.seccomp``) less ``SCHEDULING``, as bytes."""
    import errno

    from backprop_traps.grader.sandbox import seccomp
    try:
        import pyseccomp as sc
        f = sc.SyscallFilter(sc.ALLOW)
    except Exception:  # noqa: BLE001 (no libseccomp: the other layers still hold)
        return None
    for name in sorted(set(seccomp.ALWAYS_DENIED) - set(SCHEDULING)):
        try:
            f.add_rule(sc.ERRNO(errno.EPERM), name)
        except Exception:  # noqa: BLE001 (a call this architecture does not have)
            pass
    for name in seccomp.ONLY_ON_ITSELF:
        f.add_rule(sc.ERRNO(errno.EPERM), name, sc.Arg(0, sc.NE, 0))
    f.add_rule(sc.ERRNO(errno.EPERM), "setpriority", sc.Arg(0, sc.NE, seccomp.PRIO_PROCESS))
    f.add_rule(sc.ERRNO(errno.EPERM), "setpriority", sc.Arg(1, sc.NE, 0))
    with tempfile.TemporaryFile() as out:
        f.export_bpf(out)
        out.seek(0)
        return out.read()


def bwrap_command(connection_file: str, info: dict, argv: list[str], cwd: str) -> tuple[list[str], list[int]]:
    """bwrap's command line for the kernel, and the descriptors it must inherit."""
    from backprop_traps.grader.sandbox import bwrap, seccomp
    from backprop_traps.grader.sandbox.visibility import hidden_paths

    program = _seccomp_program()
    fds = [seccomp.as_fd(program)] if program is not None else []
    args = bwrap.arguments(hidden_paths([]), _environment("/tmp"), KERNEL_LIMITS.tmp_mb,
                           fds[0] if fds else None, None)
    sockets = os.path.dirname(info["ip"])
    args += ["--bind", sockets, sockets, "--ro-bind", connection_file, connection_file]
    if cwd not in ("/", "/tmp") and os.path.isdir(cwd):
        args += ["--ro-bind", cwd, cwd]
        args[args.index("--chdir") + 1] = cwd  # the notebook's folder, as a kernel expects
    rest = [a for a in argv if a != "-f" and a != connection_file]
    return [bwrap.executable(), *args, "--", sys.executable, "-m", "ipykernel_launcher",
            "-f", connection_file, *rest], fds


def _fallback(connection_file: str, info: dict, argv: list[str]) -> None:
    """No bubblewrap: Landlock and rlimits around this very process, then ipykernel in it.

    Landlock allows site-packages entry by entry (the kit's are left out), so a fresh Python
    could not list site-packages to import anything; as the grader's worker does, Python's
    import system reads the folders it needs first, then the rules apply."""
    import ipykernel.kernelapp  # noqa: F401 (imported before the rules: see the docstring)
    import numpy  # noqa: F401

    from backprop_traps.grader.sandbox import landlock
    from backprop_traps.grader.sandbox.visibility import _read_only_rules, hidden_paths

    home = tempfile.mkdtemp(prefix="bpt-kernel-home-")
    read_only = _read_only_rules(tuple(hidden_paths([]))) + [os.getcwd(), connection_file]
    if landlock.restrict(read_only, [os.path.dirname(info["ip"]), home, "/dev/null"]) == 0:
        raise SystemExit("refusing to run learner cells unconfined: this machine has neither "
                         "bubblewrap nor Landlock (see `grade doctor`)")
    _set_limits()
    os.environ.clear()
    os.environ.update(_environment(home))
    for name in [m for m, module in list(sys.modules.items())  # the kit, and its old names' aliases
                 if "backprop_traps" in (m.split(".")[0], getattr(module, "__name__", "").split(".")[0])]:
        del sys.modules[name]  # the kit is not the learner's to import (nor readable now)
    rest = [a for a in argv if a != "-f" and a != connection_file]
    sys.argv = ["ipykernel_launcher", "-f", connection_file, *rest]
    ipykernel.kernelapp.launch_new_instance()


def _join_cgroup() -> None:
    """A cgroup capping the whole kernel's memory and processes, as a grading sandbox has,
    where the grader may make one (it is reaped once this process, bwrap by then, is gone)."""
    from backprop_traps.grader.sandbox import cgroup
    mb = 1024 * 1024
    group = cgroup.create(KERNEL_LIMITS.memory_mb * mb + KERNEL_LIMITS.tmp_mb * mb + 256 * mb,
                          KERNEL_LIMITS.max_processes)
    for procs in group.procs_files if group is not None else ():
        try:
            procs.write_text(str(os.getpid()))
        except OSError:
            pass


def main(argv: list[str] | None = None) -> None:
    from backprop_traps.grader.sandbox import bwrap

    argv = list(sys.argv[1:] if argv is None else argv)
    connection_file, info = _connection(argv)
    if not (bwrap.usable() and bwrap.probe()[0]):
        _fallback(connection_file, info, argv)
        return
    command, fds = bwrap_command(connection_file, info, argv, os.getcwd())
    _join_cgroup()
    _set_limits()
    for fd in fds:
        os.set_inheritable(fd, True)
    # exec: the kernel manager's signals reach bwrap itself, and bwrap's sandbox dies with it
    os.execve(command[0], command, {"PATH": "/usr/bin:/bin"})


if __name__ == "__main__":
    main()
