"""The sandbox and the memory questions on real kernels: a matrix of QEMU machines (issue 44).

    sudo python benchmarks/machines.py [--machines v2-root,container,newer,systemd-user]

Sets up what it needs (benchmarks/vm/setup.py: Debian's QEMU and generic kernels, virtme-ng
from PyPI, the kit on the system Python, a systemd root file system from Debian's packages),
boots each machine under QEMU's software emulation (TCG: nested KVM hangs on the project's
machines) with 2 vCPUs and 4 GiB (virtme-ng over the host's root; the systemd machine from a root
disk image, vm/disk_machine.py), runs benchmarks/vm/guest.sh inside it (`grade doctor`,
every memory question's solution and a store-everything answer, the sandbox tests as root),
and writes benchmarks/results/machines.md: a row per machine and role, each layer's level,
each score with its meter, and the time. Slow: run by hand before each release (README).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
from vm import disk_machine, setup  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "machines.md"
GUEST = REPO / "benchmarks" / "vm" / "guest.sh"
QUESTIONS = ["vram_trap", "attention_backward", "grad_accumulation", "memory_budget"]
STORES_EVERYTHING = {"vram_trap": "stores_everything", "attention_backward": "materialises_p",
                     "grad_accumulation": "full_batch_at_once", "memory_budget": "stores_everything"}
"""Each memory question's answer that keeps every activation (tests/answers; as in
tests/sandbox/test_practice_meter.py), graded as a learner's file: the solution's code, then it."""
_BUILD_ANSWERS = r"""
import sys
from pathlib import Path
from backprop_traps.grader.loading.notebook import graded_code, parse_notebook
from backprop_traps.grader.loading.questions import solution_path
out, answers = Path(sys.argv[1]), Path(sys.argv[2])
for pair in sys.argv[3:]:
    q, name = pair.split("=")
    base = graded_code(parse_notebook(solution_path(q).read_text(encoding="utf-8")))
    snippet = (answers / q / f"{name}.py").read_text()
    (out / f"{q}.py").write_text(f"# question: {q}\n{base}\n\n# --- the answer under test ---\n{snippet}")
"""
BOOT_TIMEOUT = 3 * 3600
"""Seconds a machine may run (``--minutes``); then what it wrote so far is its row."""
COURSE_LIMITS = "--call-timeout 900 --total-timeout 5400"
"""A course's budgets are its instructor's and never scale: under emulation the instructor sets them."""


@dataclass
class Machine:
    name: str
    what: str
    roles: list[str]
    kernel: str = "old"
    """``old``: Debian 12's own kernel (6.1); ``newer``: >= 6.12 from backports."""
    systemd: bool = False
    env: str = ""
    """Shell assignments for the guest script."""


MACHINES = [
    Machine("v2-root", "cgroup v2 as root, Debian 12 kernel (pre-6.12 peak reset)", ["root"]),
    Machine("systemd-user", "unprivileged user under systemd (a user manager, lingering); plain, "
            "then `systemd-run --user --scope -p Delegate=yes`", ["user"], systemd=True),
    Machine("container", "JupyterHub/Kubernetes-like: user namespaces refused "
            "(user.max_user_namespaces=0), no cgroup delegation, unprivileged; the course's "
            "budgets are an instructor's for an emulated machine", ["container"],
            env=f"BPT_COURSE_LIMITS={shlex.quote(COURSE_LIMITS)}"),
    Machine("newer", "cgroup v2 as root, kernel >= 6.12 (per-descriptor memory.peak reset)", ["root"],
            kernel="newer"),
]


def boot(machine: Machine, found: dict, out: Path, timeout: float = BOOT_TIMEOUT,
         what: str = "solution stores", questions: str = "", parts: str = "",
         verbose: bool = False) -> tuple[float, str]:
    """Boot ``machine``, run the guest script, return (wall seconds, what went wrong or "")."""
    kernels = found["kernels"]
    vmlinuz = (found["newer"][0] if machine.kernel == "newer"
               else kernels[min(kernels, key=setup._version)])
    if vmlinuz is None:
        return 0.0, found["newer"][1]
    kit = found["kit"]
    (out / "answers").mkdir(exist_ok=True)
    subprocess.run([str(kit / "bin" / "python"), "-c", _BUILD_ANSWERS, str(out / "answers"),
                    str(REPO / "tests" / "answers"), *(f"{q}={a}" for q, a in STORES_EVERYTHING.items())],
                   check=True)
    targeted = {name: value for name, value in (("BPT_QUESTIONS", questions), ("BPT_PARTS", parts)) if value}
    image = out / "root.img"
    if machine.systemd:  # a root disk booted with systemd as init, as a laptop boots (vm/disk_machine.py)
        disk_machine.build(found["rootfs"], REPO, kit, out, image=image, env={
            "BPT_USER": setup.LEARNER, "BPT_LOGIN": "1", "BPT_WHAT": what, **targeted,
            # outside the scope, the solution alone shows the labelled practice meter and the command
            "BPT_PLAIN_WHAT": "solution" if "solution" in what.split() else what})
        cmd = ["nice", "-n", "10", *disk_machine.command(vmlinuz, image, out / "serial.log")]
    else:  # virtme-ng: the host's own root file system, shared read-only
        guest = " ".join(f"{k}={shlex.quote(v)}" for k, v in {**targeted, "BPT_WHAT": what}.items())
        guest = f"{machine.env} {guest} bash {shlex.quote(str(GUEST))} {shlex.quote(str(out))} " \
                f"{shlex.quote(str(kit))} {' '.join(machine.roles)}".strip()
        cmd = ["nice", "-n", "10", str(found["vng"]), "--disable-kvm", "--force-9p", "-r", str(vmlinuz),
               "--memory", "4G", "--cpus", "2", f"--rwdir={out}={out}", f"--rodir={kit}={kit}"]
        # (the kit gets a mount of its own: virtme-ng overlays the host's /var, where it is cached)
        if verbose:  # the kernel's and init's console into console.log
            cmd.append("--verbose")
        cmd += ["-e", guest]
    env = dict(os.environ, PATH=f"{Path(found['vng']).parent}:{os.environ['PATH']}")
    start, cpu_before = time.monotonic(), _children_cpu()
    load = LoadSampler()
    with load, subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True) as vm:
        try:
            console, _ = vm.communicate(timeout=timeout)
            why = ""
        except subprocess.TimeoutExpired:  # QEMU may be vng's child: end the whole group
            cpu = _cpu_seconds(vm.pid)
            os.killpg(vm.pid, signal.SIGTERM)
            console, _ = vm.communicate()
            why = (f"stopped after {timeout / 60:.0f} min (QEMU had {cpu:.0f} CPU-s of it; "
                   f"load average {os.getloadavg()[0]:.0f} on {os.cpu_count()} cores)")
    (out / "console.log").write_text(console[-2_000_000:])
    if image.exists():  # what the guest wrote in the disk image, then the image goes (4 GiB sparse)
        disk_machine.results(image, out)
        image.unlink()
    if not why and not (out / "finished").exists():
        why = f"the guest did not finish (exit {vm.returncode})"
    cpu = f"QEMU had {_children_cpu() - cpu_before:.0f} CPU-s" if not why.startswith("stopped") else ""
    return time.monotonic() - start, "; ".join(filter(None, [load.said(), cpu, why]))


def _children_cpu() -> float:
    """CPU seconds of this process's finished descendants (QEMU, once vng or it has exited)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


class LoadSampler(threading.Thread):
    """The host's 1-minute load average every ``every`` seconds while a machine runs: a row says
    how busy the 2 cores were, since emulation's speed follows it."""

    def __init__(self, every: float = 30.0):
        super().__init__(daemon=True)
        self.every, self.seen, self._stop_it = every, [os.getloadavg()[0]], threading.Event()

    def run(self) -> None:
        while not self._stop_it.wait(self.every):
            self.seen.append(os.getloadavg()[0])

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self._stop_it.set()
        self.seen.append(os.getloadavg()[0])

    def said(self) -> str:
        return (f"host load average {min(self.seen):.1f}-{max(self.seen):.1f} "
                f"(median {statistics.median(self.seen):.1f}; 1-min, every {self.every:.0f} s, on {os.cpu_count()} cores)")


def _cpu_seconds(pid: int) -> float:
    """CPU seconds a process group's QEMU used so far (0 when it is gone)."""
    try:
        found = subprocess.run(["ps", "-o", "times=", "--sid", str(pid)], capture_output=True, text=True).stdout
        return sum(float(x) for x in found.split())
    except (OSError, ValueError):
        return 0.0


def rows(machine: Machine, out: Path, seconds: float, why: str) -> list[str]:
    """The table's rows for one machine: one per role folder the guest wrote."""
    found = []
    for role in sorted(p for p in out.iterdir() if p.is_dir() and p.name != "answers"):
        kernel = _read(role / "kernel").strip()
        layers = "<br>".join(_layers(_read(role / "doctor.out"))) or "doctor failed: " + _read(role / "doctor.err")[-200:]
        scores = []
        for prefix in ("", "course.", "scope."):
            for q in QUESTIONS:
                for what in ("solution", "stores"):
                    cell = _score(role, f"{prefix}{q}.{what}")
                    if cell:
                        scores.append(f"{prefix}{q} {what}: {cell}")
        tests = _tests(role)
        found.append(f"| {machine.name} ({role.name}) | {kernel} | {layers} | {'<br>'.join(scores) or '-'} "
                     f"| {tests} | {seconds / 60:.1f} min{'; ' + why if why else ''} |")
    return found or [f"| {machine.name} | - | - | - | - | {seconds / 60:.1f} min; {why or 'no output'} |"]


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def _layers(doctor: str) -> list[str]:
    """Each layer's level in a few words (the doctor's own, cut), and the memory meter's verdict."""
    said = []
    for line in doctor.splitlines():
        if line.startswith(("  yes", "  NO")):
            level, rest = line.split(None, 1)
            name, _, detail = rest.partition(": ")
            said.append(f"{name}: **{level.lower()}** ({detail[:110]}{'...' if len(detail) > 110 else ''})")
    meter = next((line[len("Memory: "):] for line in doctor.splitlines() if line.startswith("Memory: ")), "")
    if meter:
        said.append("memory: " + meter.split(":")[0])
    return [s.replace("|", "/") for s in said]


def _score(role: Path, name: str) -> str:
    """``12/12 [meter] (s)``, with a failed memory check's trap or sentence."""
    text, timing = _read(role / f"{name}.out"), _read(role / f"{name}.time").split()
    if not timing:  # started, not finished when the machine stopped (or never started)
        return "not finished when the machine stopped" if (role / f"{name}.err").exists() else ""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        return f"no JSON (exit {timing[0] if timing else '?'}): {_read(role / f'{name}.err')[-160:]!r}"
    meter = doc.get("memory") or "no measured call"  # the meter's label
    lost = [f"{t['name']}: {t.get('trap') or t['feedback'][:140]}" for t in doc.get("tests", [])
            if not t["passed"]]
    secs = f" {float(timing[1]):.0f} s" if len(timing) > 1 else ""
    head = f"{doc['score']:g}/{doc['max_score']:g} [{meter}]{secs}"
    return head + (" lost: " + "; ".join(lost).replace("|", "/").replace("\n", " ") if lost else "") \
        + (f" error: {doc['error']}" if doc.get("error") else "")


def _tests(role: Path) -> str:
    out = _read(role / "tests.out").strip().splitlines()
    timing = _read(role / "tests.time").split()
    if out and len(timing) > 1:
        return f"{out[-1]} ({float(timing[1]):.0f} s)"
    if out:  # stopped while running: pytest -q's progress so far
        dots = "".join(line for line in out if set(line) <= set(".FEsxX"))
        return (f"stopped while running: {dots.count('.')} passed, {dots.count('F') + dots.count('E')} "
                f"failed, {dots.count('s')} skipped so far")
    return "-"


def write(all_rows: list[str], notes: list[str]) -> None:
    load = os.getloadavg()
    RESULTS.write_text(
        "# The sandbox and the memory questions on real kernels\n\n"
        "`sudo python benchmarks/machines.py` (issue 44). Each machine boots under QEMU's software "
        "emulation (TCG, 2 vCPUs, 4 GiB, `nice -n 10`): with virtme-ng over the host's root, the "
        "systemd machine from a root disk image (benchmarks/vm/disk_machine.py); a score's bracket is the "
        "memory meter its measured calls used. Practice budgets scale to the machine's speed, probed "
        "again when a call runs out of time (grader/sandbox/machine_speed.py, speed_recheck.py); a "
        "course's stay as set.\n\n"
        f"Host: {platform.node()}, {os.cpu_count()} cores, load average {load[0]:.1f} {load[1]:.1f} "
        f"{load[2]:.1f} at the end, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.\n\n"
        "| machine (role) | kernel | layers (`grade doctor`) | scores | sandbox tests | time |\n"
        "|---|---|---|---|---|---|\n" + "\n".join(all_rows) + "\n\n" + "\n".join(f"- {n}" for n in notes) + "\n")


def table_from(runs: list[Path], notes: list[str]) -> None:
    """The table from earlier runs (each folder's meta.json), in the order of ``MACHINES``."""
    metas = {run: json.loads(_read(run / "meta.json") or "{}") for run in runs}
    order = [m.name for m in MACHINES]
    runs = sorted((r for r in runs if metas[r].get("machine") in order),
                  key=lambda r: order.index(metas[r]["machine"]))
    by_name = {m.name: m for m in MACHINES}
    chosen = [by_name[metas[r]["machine"]] for r in runs]
    write([row for r, m in zip(runs, chosen) for row in rows(m, r, metas[r]["seconds"], metas[r]["why"])],
          list(dict.fromkeys(f"{m.name}: {m.what}." for m in chosen)) + notes)
    print(f"wrote {RESULTS.relative_to(REPO)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machines", default=",".join(m.name for m in MACHINES),
                        help="comma-separated machines to boot, in this order")
    parser.add_argument("--keep", type=Path, default=setup.CACHE / "runs",
                        help="each machine's raw output goes in a new folder here")
    parser.add_argument("--minutes", type=float, default=BOOT_TIMEOUT / 60,
                        help="stop a machine after this long; its row shows what it did")
    parser.add_argument("--answers", default="solution,stores",
                        help="which answers to grade: solution, stores (store-everything), or both")
    parser.add_argument("--questions", default="",
                        help=f"comma-separated memory questions to grade (default all: {','.join(QUESTIONS)})")
    parser.add_argument("--parts", default="",
                        help="comma-separated parts to run: practice (the gradings), course (the container's "
                             "course gradings), tests (the sandbox tests as root); default all")
    parser.add_argument("--verbose", action="store_true",
                        help="keep a virtme-ng machine's boot console (kernel messages) in the run's "
                             "console.log (the systemd machine's serial console is always in serial.log)")
    parser.add_argument("--from", dest="runs", type=Path, nargs="+", default=None,
                        help="write the table from these earlier runs' folders, booting nothing")
    parser.add_argument("--note", action="append", default=[], help="a line under the table (repeatable)")
    args = parser.parse_args()
    chosen = [m for name in args.machines.split(",") for m in MACHINES if m.name == name]
    if args.runs:
        return table_from(args.runs, args.note)
    found = setup.ensure(REPO, with_rootfs=any(m.systemd for m in chosen))
    notes = [f"{m.name}: {m.what}." for m in chosen] + args.note
    if found["newer"][0] is None:
        notes.append(f"newer: {found['newer'][1]}.")
    all_rows = []
    for machine in chosen:
        args.keep.mkdir(parents=True, exist_ok=True)
        out = Path(tempfile.mkdtemp(prefix=f"bpt-{machine.name}-", dir=args.keep))
        out.chmod(0o1777)
        seconds, why = boot(machine, found, out, args.minutes * 60, args.answers.replace(",", " "),
                            args.questions.replace(",", " "), args.parts.replace(",", " "), args.verbose)
        (out / "meta.json").write_text(json.dumps({"machine": machine.name, "seconds": seconds, "why": why,
                                                   "newer": found["newer"][1]}))
        all_rows += rows(machine, out, seconds, why)
        print("\n".join(all_rows[-1:]), flush=True)
        write(all_rows, notes)  # after each machine: a later one that hangs loses nothing
    print(f"wrote {RESULTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()
