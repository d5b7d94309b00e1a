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
    from grader.sandbox import bwrap, cgroup, landlock, seccomp
    found = []
    ok, detail = bwrap.probe()
    found.append(Layer("bubblewrap namespaces", ok, detail,
                       "learner code runs in the grader's own user, PID, network and IPC namespaces: it "
                       "sees other processes (their /proc entries stay closed by Landlock), SysV IPC "
                       "and loopback services, and can signal or renice same-user processes where "
                       "Landlock's signal scope (Linux 6.12) is missing"))
    version, detail = cgroup.available()
    found.append(Layer("cgroup (memory and processes)", bool(version), detail,
                       "peak memory is the worker's own high-water mark, so new processes, shared "
                       "memory and memfd are refused (seccomp); no cap on the whole sandbox's memory "
                       "beyond each process's address-space limit; no process-count cap for root"))
    ok, detail = seccomp.available()
    found.append(Layer("seccomp filter", ok, detail,
                       "kernel keyrings are reachable (a note could pass between submissions of the "
                       "same user), and without a cgroup memory cannot be measured (vram checks say so)"))
    abi = landlock.abi_version()
    found.append(Layer("Landlock", abi > 0, f"ABI {abi}" if abi else "not in this kernel",
                       "inside bubblewrap: nothing more (mounts already limit what is readable); "
                       "without bubblewrap: learner code can read every file the grader can"))
    root = os.geteuid() == 0
    found.append(Layer("unprivileged grader", not root, "running as root" if root else f"uid {os.geteuid()}",
                       "as root, the sandbox's processes are root's outside their user namespace: "
                       "contained by the namespaces and no capabilities, but run batches as a dedicated "
                       "user where you can"))
    return found


def summary() -> str:
    """One line for results: which layers ran."""
    return ", ".join(layer.name for layer in layers() if layer.present)
