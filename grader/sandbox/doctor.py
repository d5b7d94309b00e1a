"""What this machine's sandbox gives, layer by layer, in words an instructor can act on
(``grade doctor``): each layer, whether it is there, and what is missing without it."""
from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass
class Layer:
    name: str
    present: bool
    detail: str
    without: str
    """What is not covered when this layer is missing."""


def layers() -> list[Layer]:
    from backprop_traps.grader.sandbox import bwrap, cgroup, landlock, seccomp
    found = []
    ok, detail = bwrap.probe()
    found.append(Layer("bubblewrap namespaces", ok, detail,
                       "learner code runs in the grader's own user, PID, network and IPC namespaces: it "
                       "sees other processes (their /proc entries stay closed by Landlock), SysV IPC "
                       "and loopback services, and can signal or renice same-user processes where "
                       "Landlock's signal scope (Linux 6.12) is missing; maxpool_kernel's kernels cannot "
                       "be graded (numba-cuda does not import under the fallback's file rules)"))
    version, detail = cgroup.available()
    found.append(Layer("cgroup (memory and processes)", bool(version), detail,
                       "no trustworthy memory meter (a process's own resident size counts library pages "
                       "it can unmap at will), so memory is not measured and memory checks give no "
                       "points; new processes, shared memory and memfd are refused (seccomp); no cap on "
                       "the whole sandbox's memory beyond each process's address-space limit"))
    ok, detail = seccomp.available()
    found.append(Layer("seccomp filter", ok, detail,
                       "kernel keyrings are reachable (a note could pass between submissions of the "
                       "same user); page cache can be evicted, so memory is not measured (memory checks "
                       "give no points); inotify, POSIX message queues, io_uring and file locks, which "
                       "the kernel counts per user across the host, are open to the sandbox"))
    abi = landlock.abi_version()
    found.append(Layer("Landlock", abi > 0, f"ABI {abi}" if abi else "not in this kernel",
                       "inside bubblewrap: nothing more (mounts already limit what is readable); "
                       "without bubblewrap: learner code can read every file the grader can"))
    return found


def memory_meter() -> str:
    """Whether memory checks can give points here, and why (issue 23, class 1)."""
    from backprop_traps.grader.sandbox import cgroup, seccomp
    from backprop_traps.grader.sandbox.measure import NO_CGROUP
    version, _ = cgroup.available()
    filtered, _ = seccomp.available()
    if version and filtered:
        return (f"measured: each measured call runs in a cgroup (v{version}) of its own that counts from "
                "zero, so page cache evicted during it hides nothing; eviction and swapping out are "
                "refused or counted")
    why = NO_CGROUP if not version else "no seccomp filter here to refuse page-cache eviction"
    return f"NOT measured: {why}. Memory checks give no points on this machine"


def notes() -> list[str]:
    """Advice beyond the layers: how the grader itself is run."""
    if os.geteuid() == 0:
        return ["the grader runs as root: the sandbox's processes are root's outside their user "
                "namespace (contained by the namespaces, seccomp and no capabilities); run batches "
                "as a dedicated unprivileged user where you can"]
    return []


def summary() -> str:
    """One line for results: which layers ran."""
    return ", ".join(layer.name for layer in layers() if layer.present)
