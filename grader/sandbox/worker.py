"""The child process: loads a learner's code and answers calls, inside the sandbox.

Run by path as ``python -I worker.py`` (it imports nothing from the kit). Start-up order
matters: read the set-up message, set the resource limits, import numpy, open the /proc
files for memory measurement, *then* narrow the filesystem and network with Landlock, and
only then run learner code. Requests arrive on fd 0, answers leave on the fd named in argv[1], and whatever
the learner prints goes to fd 1/2, which the grader drains and caps. The grader trusts
nothing it receives from here beyond the wire format.
"""
import os
import resource
import signal
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import landlock  # noqa: E402
import wire  # noqa: E402

del sys.path[0]
import numpy as np  # noqa: E402,F401  (loaded before the filesystem is narrowed)

REQ_FD = 0
RESP_FD = int(sys.argv[1]) if len(sys.argv) > 1 else 3
SUBMISSION = "<submission>"


def read_frame(fd):
    def exact(n):
        chunks, need = [], n
        while need:
            chunk = os.read(fd, min(need, 1 << 20))
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            need -= len(chunk)
        return b"".join(chunks)
    (n,) = wire._LEN.unpack(exact(8))
    return wire.decode(exact(n))


def set_limits(limits):
    mb = 1024 * 1024
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_mb"] * mb,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_mb"] * mb,) * 2)
    cpu = int(limits["total_seconds"]) + 5  # a backstop; the grader's wall clock rules
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # over-size writes fail, not kill


class Memory:
    """Peak memory of one call: the process's resident high-water mark, reset before the
    call (catches every allocator, numpy's and torch's too), and tracemalloc's peak."""

    def __init__(self):
        try:
            self.status = os.open("/proc/self/status", os.O_RDONLY)
            self.clear_refs = os.open("/proc/self/clear_refs", os.O_WRONLY)
        except OSError:  # not Linux, or /proc not mounted: say so, never pass silently
            self.status = self.clear_refs = None
        # glibc parks freed blocks in its heap: fragmentation inflates the resident peak (3-5x
        # for torch's allocation pattern) and an earlier call's pages, reused, hide it. A fixed
        # mmap threshold maps and unmaps every big block, so resident memory tracks live memory.
        try:
            import ctypes
            libc = ctypes.CDLL(None)
            libc.mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD, fixed (no dynamic raise)
            self.trim = libc.malloc_trim
        except (OSError, AttributeError):  # not glibc: measure as is
            self.trim = None

    def _field(self, name):
        text = os.pread(self.status, 65536, 0).decode()
        for line in text.splitlines():
            if line.startswith(name + ":"):
                return int(line.split()[1]) * 1024
        return 0

    def measure(self, fn):
        import tracemalloc
        if self.status is None:
            return fn(), {"rss_peak": None, "traced_peak": None, "peak": None,
                          "unavailable": "this platform has no /proc to read peak memory from"}
        import gc
        gc.collect()  # earlier calls' garbage, freed now, not reused unseen during this call
        if self.trim is not None:
            self.trim(0)  # hand freed heap pages back to the kernel: RSS counts live memory
        os.write(self.clear_refs, b"5")  # reset VmHWM to the current RSS
        rss_before = self._field("VmRSS")
        tracemalloc.start()
        try:
            result = fn()
        finally:
            _, traced = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        rss_peak = self._field("VmHWM") - rss_before
        return result, {"rss_peak": rss_peak, "traced_peak": traced, "peak": max(rss_peak, traced)}


def describe_exception(exc):
    """Where in the learner's code it happened: (line number, type name, message)."""
    line = exc.lineno if isinstance(exc, SyntaxError) and exc.filename == SUBMISSION else None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == SUBMISSION:
            line = frame.lineno
    message = str(exc)
    return {"type": type(exc).__name__, "message": message[:400], "line": line}


def run_cell(source, name, namespace):
    """Run one visible test cell: {"ok": True} or the exception and the cell's line."""
    try:
        exec(compile(source, name, "exec"), namespace)
    except Exception as exc:  # an exiting or interrupted cell ends the whole op instead
        line = exc.lineno if isinstance(exc, SyntaxError) and exc.filename == name else None
        for frame in traceback.extract_tb(exc.__traceback__):
            if frame.filename == name:
                line = frame.lineno
        return {"ok": False, "type": type(exc).__name__, "message": str(exc)[:400], "line": line}
    return {"ok": True}


def die_with_parent():
    """SIGKILL this child when the grader that started it goes away (killed, crashed, or
    its grading thread gone), so a lost grader never leaves a sandbox running."""
    parent = os.getppid()
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the grader's kill_tree still applies
        return
    if os.getppid() != parent:  # the grader died before the line above took effect
        os._exit(1)


def main():
    die_with_parent()
    setup = read_frame(REQ_FD)
    set_limits(setup["limits"])
    os.chdir(setup["tmpdir"])
    memory = Memory()
    isolation = "none"
    if setup.get("isolate", True):
        try:
            # Its own /proc entry only: other processes' environ and cmdline stay unreadable.
            own = [f"/proc/{os.getpid()}"]
            abi = landlock.restrict(setup["read_only"] + own, setup["read_write"])
            isolation = f"landlock-abi-{abi}" if abi else "none"
        except OSError as e:
            isolation = f"none ({e})"
    sys.stdin = open(os.devnull)
    wire.write_frame(RESP_FD, {"ok": True, "isolation": isolation})

    namespace = {"__name__": "submission"}
    while True:
        try:
            req = read_frame(REQ_FD)
        except EOFError:
            return
        op = req.get("op")
        start = time.perf_counter()
        reply = {"ok": True}
        try:
            if op == "load":
                # The grader's own helpers load under their own name: a traceback then
                # points at the learner's line that called them, not at a helper's line.
                exec(compile(req["source"], req.get("name", SUBMISSION), "exec"), namespace)
            elif op == "call":
                fn = namespace.get(req["fn"])
                if not callable(fn):
                    reply = {"ok": False, "kind": "missing"}
                else:
                    args = req["args"]
                    if req.get("measure_memory"):
                        value, reply["memory"] = memory.measure(lambda: fn(*args))
                    else:
                        value = fn(*args)
                    reply["value"] = value
                    if req.get("echo_args"):
                        reply["args_after"] = args
            elif op == "run_cells":  # the notebook's visible tests, after the learner's code
                reply["value"] = [run_cell(source, f"<visible test {i}>", namespace)
                                  for i, source in enumerate(req["cells"])]
            else:
                return
        except BaseException as exc:  # SystemExit and KeyboardInterrupt are answers too
            kind = "not_implemented" if isinstance(exc, NotImplementedError) else "exception"
            reply = {"ok": False, "kind": kind, "error": describe_exception(exc)}
        reply["seconds"] = time.perf_counter() - start
        sys.stdout.flush()
        try:
            wire.write_frame(RESP_FD, reply)
        except wire.WireError as e:
            wire.write_frame(RESP_FD, {"ok": False, "kind": "bad_return", "message": str(e),
                                       "seconds": reply["seconds"]})


if __name__ == "__main__":
    main()
