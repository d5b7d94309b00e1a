"""The systemd machine booted as a laptop boots (benchmarks/machines.py, issue 44): Debian's
kernel and initramfs, a root disk with systemd as PID 1, a lingering user whose manager starts
at boot, logged in through PAM (``runuser -l``: a logind session, as a desktop login makes).

Why not virtme-ng's ``--systemd`` over the shared root: there the guest script never ran (see
benchmarks/results/machines.md, the systemd-user row, for what its console showed). Here the
root file system (setup.systemd_rootfs, from Debian's packages) with this checkout and the kit's
venv at their host paths becomes an ext4 image (``mke2fs -d``: no mount, no loop device), a
system unit runs benchmarks/vm/guest.sh once the machine is up and powers it off, and the
results come back out of the image with ``debugfs`` (again no mount).
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

IMAGE_MB = 4096
OUT = "/out"
"""Where the guest script writes inside the image; copied out to the run's folder afterwards."""
UNIT = "bpt-guest.service"
_UNIT_TEXT = """[Unit]
Description=backprop-traps machine check (benchmarks/machines.py)
After=systemd-user-sessions.service systemd-logind.service user@1000.service
Wants=user@1000.service

[Service]
Type=oneshot
EnvironmentFile=/etc/bpt-guest.env
ExecStart=/bin/bash {guest} {out} {kit} user
ExecStopPost=/bin/systemctl poweroff --no-block
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
"""


def build(rootfs: Path, repo: Path, kit: Path, out: Path, env: dict[str, str], image: Path) -> None:
    """The root disk image: ``rootfs`` with the checkout (no .git) and the kit at their own paths,
    the run's answers under ``OUT``, and the unit that runs the guest script with ``env``."""
    staging = image.with_suffix(".staging")
    shutil.rmtree(staging, ignore_errors=True)
    subprocess.run(["cp", "-a", "--reflink=auto", f"{rootfs}/.", str(staging)], check=True)
    shutil.copytree(repo, staging / repo.relative_to("/"), symlinks=True, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", ".hypothesis"))
    (staging / kit.relative_to("/")).parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-a", "--reflink=auto", f"{kit}/.", str(staging / kit.relative_to("/"))], check=True)
    (staging / OUT.lstrip("/")).mkdir(mode=0o1777, exist_ok=True)
    if (out / "answers").is_dir():
        shutil.copytree(out / "answers", staging / OUT.lstrip("/") / "answers")
    (staging / "etc/bpt-guest.env").write_text("".join(f'{k}="{v}"\n' for k, v in env.items()))
    unit = staging / "etc/systemd/system" / UNIT
    unit.write_text(_UNIT_TEXT.format(guest=repo / "benchmarks/vm/guest.sh", out=OUT, kit=kit))
    wants = staging / "etc/systemd/system/multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    (wants / UNIT).symlink_to(f"/etc/systemd/system/{UNIT}")
    (staging / "etc/fstab").write_text("/dev/vda / ext4 rw,relatime 0 1\n")
    image.unlink(missing_ok=True)
    subprocess.run(["mke2fs", "-q", "-t", "ext4", "-L", "bpt-root", "-d", str(staging), str(image),
                    f"{IMAGE_MB}M"], check=True)
    shutil.rmtree(staging, ignore_errors=True)


def command(vmlinuz: Path, image: Path, console: Path) -> list[str]:
    """QEMU under software emulation (nested KVM hangs here) with every CPU feature it emulates
    (its default model lacks what numpy's wheels use: "Illegal instruction"), 2 vCPUs, 4 GiB, the
    serial console to ``console``; Debian's initramfs for the kernel finds the virtio disk."""
    initrd = Path("/boot") / vmlinuz.name.replace("vmlinuz-", "initrd.img-")
    return ["qemu-system-x86_64", "-accel", "tcg", "-cpu", "max", "-m", "4G", "-smp", "2",
            "-display", "none", "-no-reboot", "-kernel", str(vmlinuz), "-initrd", str(initrd),
            "-append", "root=/dev/vda rw console=ttyS0 panic=-1 systemd.show_status=1",
            "-drive", f"file={image},if=virtio,format=raw", "-serial", f"file:{console}",
            "-monitor", "none", "-net", "none"]


def results(image: Path, out: Path) -> None:
    """What the guest wrote under ``OUT``, copied into ``out`` (debugfs reads the image)."""
    dump = out / "from-image"
    dump.mkdir(exist_ok=True)
    subprocess.run(["debugfs", "-R", f"rdump {OUT} {dump}", str(image)], check=True, capture_output=True)
    for item in (dump / OUT.lstrip("/")).iterdir():
        if item.name != "answers" and not (out / item.name).exists():
            item.rename(out / item.name)
    shutil.rmtree(dump, ignore_errors=True)
