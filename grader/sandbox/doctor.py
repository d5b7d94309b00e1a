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
                       "no tamper-proof memory meter (a process's own resident size counts library pages "
                       "it can unmap at will): a course's memory checks give no points, a learner's own "
                       "practice uses the practice meter; new processes, shared memory and memfd are "
                       "refused (seccomp); no cap on the whole sandbox's memory beyond each process's "
                       "address-space limit"))
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
    """Whether memory checks can give points here, how, and why (issues 23, 39)."""
    from backprop_traps.grader.sandbox import cgroup, seccomp
    from backprop_traps.grader.sandbox.measure import NO_CGROUP, NO_PEAK, PRACTICE
    place = cgroup.placement()
    filtered, _ = seccomp.available()
    if place.version and filtered and cgroup.peak_readable(place):
        return (f"measured tamper-proof: each measured call runs in a cgroup of its own ({place.detail}) that "
                "counts from zero, so page cache evicted during it hides nothing; held memory counts as "
                "anonymous, shared and kernel memory; eviction and swapping out are refused or counted")
    why = (f"{NO_CGROUP} ({place.detail})" if not place.version else
           NO_PEAK if not cgroup.peak_readable(place) else "no seccomp filter here to refuse page-cache eviction")
    return (f"NOT measured by a tamper-proof meter: {why}. In a course (a course secret, `grade batch`, "
            "nbgrader) memory checks give no points on this machine; for your own practice (`grade FILE`) "
            f'the practice meter gives them, labelled "{PRACTICE}"')


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
