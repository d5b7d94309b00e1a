"""What the machines need, from Debian's packages and PyPI, set up once and found again
(benchmarks/machines.py). Every step checks first and does nothing when its result is there.

Kept outside the repository (images and kernels are large): ``CACHE``, world-readable, since
the unprivileged users inside the machines run the kit's venv from it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

CACHE = Path(os.environ.get("BACKPROP_TRAPS_MACHINES_CACHE", "/var/cache/backprop-traps-machines"))
HOST_PACKAGES = ["qemu-system-x86", "linux-image-amd64", "mmdebstrap", "busybox-static", "python3-venv"]
"""QEMU (software emulation: nested KVM hangs on the project's machines), Debian's generic kernel
(its cloud kernel has no 9p, which virtme-ng's shared root needs), mmdebstrap for the systemd
machine's root file system."""
BACKPORTS = "deb http://deb.debian.org/debian bookworm-backports main"
ROOTFS_PACKAGES = ("systemd-sysv,dbus,dbus-user-session,libpam-systemd,python3,util-linux,procps,libseccomp2,"
                   "kmod,udev,gawk")
"""A Debian root file system booted with systemd as init: logind and a user manager
(libpam-systemd) with its bus (dbus-user-session), as on a laptop; the system Python the kit's
venv is built on; libseccomp for the filter."""
LEARNER = "learner"
"""The unprivileged user of the systemd machine (uid 1000, lingering: its manager starts at boot)."""


def sh(*cmd: str, **kw) -> subprocess.CompletedProcess:
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(["nice", "-n", "10", *cmd], check=True, **kw)


def apt_packages() -> None:
    missing = [p for p in HOST_PACKAGES if subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True).stdout != "install ok installed"]
    if missing:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        sh("apt-get", "update", "-q", env=env)
        sh("apt-get", "install", "-y", "-q", "--no-install-recommends", *missing, env=env)


def tools_venv() -> Path:
    """virtme-ng (PyPI), which boots a kernel over a shared root file system in seconds."""
    venv = CACHE / "tools-venv"
    if not (venv / "bin" / "vng").exists():
        sh("/usr/bin/python3", "-m", "venv", str(venv))
        sh(str(venv / "bin" / "pip"), "install", "-q", "virtme-ng")
    return venv


def kit_venv(repo: Path) -> Path:
    """The kit on the system Python, world-readable: an unprivileged user in a machine cannot
    run a Python under /root (pyenv's); installed editable, so the run tests this checkout."""
    venv = CACHE / "kit-venv"
    if not (venv / "bin" / "grade").exists():
        sh("/usr/bin/python3", "-m", "venv", str(venv))
        sh(str(venv / "bin" / "pip"), "install", "-q", "-e", str(repo), "pytest", "hypothesis")
    return venv


def generic_kernels() -> dict[str, Path]:
    """Debian's generic kernels installed here: release -> vmlinuz."""
    found = {}
    for vmlinuz in sorted(Path("/boot").glob("vmlinuz-*-amd64")):
        if "cloud" not in vmlinuz.name and Path("/lib/modules", vmlinuz.name[len("vmlinuz-"):]).is_dir():
            found[vmlinuz.name[len("vmlinuz-"):]] = vmlinuz
    return found


def newer_kernel() -> tuple[Path | None, str]:
    """A kernel >= 6.12 from bookworm-backports (per-descriptor memory.peak reset), installed
    from a scratch apt configuration (the host's sources stay as they are); or why not."""
    for release, vmlinuz in generic_kernels().items():
        if _version(release) >= (6, 12):
            return vmlinuz, release
    scratch = CACHE / "apt-backports"
    for sub in ("lists/partial", "archives/partial"):
        (scratch / sub).mkdir(parents=True, exist_ok=True)
    (scratch / "sources.list").write_text(BACKPORTS + "\n")
    opts = [f"-oDir::Etc::sourcelist={scratch / 'sources.list'}", "-oDir::Etc::sourceparts=-",
            f"-oDir::State::Lists={scratch / 'lists'}", "-oAPT::Get::List-Cleanup=0"]
    sh("apt-get", *opts, "update", "-q")
    shown = subprocess.run(["apt-cache", *opts, "show", "linux-image-amd64"], capture_output=True,
                           text=True).stdout
    depends = [line.split(":", 1)[1].split("(")[0].strip() for line in shown.splitlines()
               if line.startswith("Depends: linux-image-")]
    newest = max(depends, key=lambda name: _version(name[len("linux-image-"):]), default=None)
    if newest is None or _version(newest[len("linux-image-"):]) < (6, 12):
        return None, f"bookworm-backports offers no kernel >= 6.12 (it has {newest or 'none'})"
    sh("apt-get", *opts, "download", newest, cwd=scratch / "archives")
    deb = next((scratch / "archives").glob(f"{newest}_*.deb"))
    sh("dpkg", "-i", str(deb), env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    release = newest[len("linux-image-"):]
    return generic_kernels().get(release), release


def _version(release: str) -> tuple[int, int]:
    head = release.split("-")[0].split("+")[0].split(".")
    return (int(head[0]), int(head[1])) if len(head) > 1 and head[0].isdigit() else (0, 0)


def systemd_rootfs(repo: Path, kit: Path) -> Path:
    """A Debian root file system from Debian's packages, booted with systemd as init: a
    lingering ``learner`` whose user manager runs from boot (vm/disk_machine.py makes it a root
    disk, with Debian's kernel and initramfs from the host's /boot)."""
    root = CACHE / "rootfs-bookworm"
    if not (root / "etc" / "bpt-ready").exists():
        tmp = CACHE / "rootfs-bookworm.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        sh("mmdebstrap", "--variant=minbase", f"--include={ROOTFS_PACKAGES}", "bookworm", str(tmp),
           "http://deb.debian.org/debian")
        sh("chroot", str(tmp), "useradd", "-m", "-u", "1000", "-s", "/bin/bash", LEARNER)
        (tmp / "var/lib/systemd/linger").mkdir(parents=True, exist_ok=True)
        (tmp / "var/lib/systemd/linger" / LEARNER).touch()  # `loginctl enable-linger learner`
        (tmp / "etc" / "bpt-ready").touch()
        shutil.rmtree(root, ignore_errors=True)
        tmp.rename(root)
    for shared in (repo, kit):  # where the guest mounts them (machines.py: --rwdir)
        (root / shared.relative_to("/")).mkdir(parents=True, exist_ok=True)
    return root


def ensure(repo: Path, with_rootfs: bool = True) -> dict:
    """Everything, set up or found; returns the paths the machines use."""
    if os.geteuid() != 0:
        sys.exit("benchmarks/machines.py sets up Debian packages and boots QEMU: run it as root.")
    CACHE.mkdir(parents=True, exist_ok=True)
    CACHE.chmod(0o755)
    apt_packages()
    found = {"vng": tools_venv() / "bin" / "vng", "kit": kit_venv(repo), "kernels": generic_kernels()}
    found["newer"] = newer_kernel()
    if with_rootfs:
        found["rootfs"] = systemd_rootfs(repo, found["kit"])
    return found
