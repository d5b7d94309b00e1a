"""Landlock (Linux >= 5.13), through ctypes: narrow what a process may touch, unprivileged.

Used by the child worker on itself, after it has loaded what it needs and before learner
code runs. Rules are an allow-list: read-only trees, read-write trees, no TCP bind or
connect (ABI >= 4), no signals or abstract unix sockets outside the sandbox (ABI >= 6).
Once applied it cannot be undone, also by the learner's code or its children.
Standard library only: the worker imports this file by path.
"""
from __future__ import annotations

import ctypes
import os
import platform

_SYS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446)}
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_DIR_WRITE = sum(1 << i for i in range(4, 13))  # remove/make dir, file, sock, fifo, ...
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX, SCOPE_SIGNAL = 1 << 0, 1 << 1

READ_ONLY = EXECUTE | READ_FILE | READ_DIR


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64),
                ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The kernel's Landlock ABI version, or 0 where Landlock is unavailable."""
    if platform.system() != "Linux" or platform.machine() not in _SYS:
        return 0
    create = _SYS[platform.machine()][0]
    version = _libc().syscall(create, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(version, 0)


def _handled_fs(abi: int) -> int:
    rights = READ_ONLY | WRITE_FILE | _DIR_WRITE
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def restrict(read_only: list[str], read_write: list[str]) -> int:
    """Apply the rules to this process; return the ABI used (0: nothing could be applied).

    Paths that do not exist are skipped. Files get only the file rights of the set.
    """
    abi = abi_version()
    if abi < 1:
        return 0
    libc = _libc()
    create, add_rule, restrict_self = _SYS[platform.machine()]
    handled = _handled_fs(abi)
    attr = _RulesetAttr(handled, NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0,
                        SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL if abi >= 6 else 0)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = libc.syscall(create, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for paths, rights in ((read_only, READ_ONLY), (read_write, handled)):
            for path in paths:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    allowed = rights & handled
                    if not os.path.isdir(path):
                        allowed &= _FILE_ONLY
                    rule = _PathBeneath(allowed, fd)
                    if libc.syscall(add_rule, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0) < 0:
                        raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
                finally:
                    os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if libc.syscall(restrict_self, ruleset, 0) < 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    return abi


def allowed_entries(root: str, hidden: list[str]) -> list[str]:
    """``root`` itself, or, where a hidden path lies inside it, its entries minus the hidden.

    Landlock cannot deny below an allowed folder, so a folder that holds something the
    learner must not read (the kit's own packages in site-packages) is opened up entry by
    entry instead.
    """
    root = os.path.realpath(root)
    hidden_real = [os.path.realpath(h) for h in hidden]
    if any(h == root for h in hidden_real):
        return []
    if not any(h.startswith(root.rstrip(os.sep) + os.sep) for h in hidden_real):
        return [root]
    out = []
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    for name in names:
        out.extend(allowed_entries(os.path.join(root, name), hidden_real))
    return out
