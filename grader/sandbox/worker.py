"""The child process: loads a learner's code and answers calls, inside the sandbox.

Run by path as ``python -I worker.py`` (it imports nothing from the kit), normally inside
bubblewrap (grader/sandbox/bwrap.py). Start-up order matters: read the set-up message, set
the resource limits, import numpy, *then* narrow the filesystem and network with Landlock
(and, without bubblewrap, load the seccomp filter), and only then run learner code.
Requests arrive on fd 0, answers leave on the fd named in argv[1], and whatever the learner
prints goes to fd 1/2, which the grader drains and caps. The grader trusts nothing it
receives from here beyond the wire format, and measures nothing here: memory is read by
the grader from the kernel, multiply-adds are counted by the grader (``ask``).
"""
import os
import resource
import signal
import sys
import time
import traceback

BOOT = [time.monotonic()]  # when the worker's own code began (for the grader's profile only)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import imports  # noqa: E402
import landlock  # noqa: E402
import seccomp  # noqa: E402
import wire  # noqa: E402

del sys.path[0]
import numpy as np  # noqa: E402,F401  (loaded before the filesystem is narrowed)
wire.numpy()  # the encoder keeps this numpy: a submission that swaps sys.modules["numpy"] changes nothing
BOOT.append(time.monotonic())

REQ_FD = 0
RESP_FD = int(sys.argv[1]) if len(sys.argv) > 1 else 3
SUBMISSION = "<submission>"


def read_frame(fd):
    """The grader's next request (trusted: the child-facing bounds do not apply)."""
    return wire.decode(wire.read_frame_body(lambda n: os.read(fd, n), 1 << 40), from_grader=True)


def ask(name, *args):
    """Ask the grader to do ``name(*args)`` (e.g. a counted matrix product) and return its
    answer: trusted helpers injected after the learner's code call this."""
    wire.write_frame(RESP_FD, {"op": "ask", "name": name, "args": list(args)})
    reply = read_frame(REQ_FD)
    if not isinstance(reply, dict) or "error" in reply:
        raise ValueError(reply.get("error", "the grader refused") if isinstance(reply, dict) else "bad reply")
    return reply.get("value")


def set_limits(limits):
    mb = 1024 * 1024
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_mb"] * mb,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_mb"] * mb,) * 2)
    # per-user counts of the host (issue 23, class 4): a sandbox gets a small share, hard
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits.get("open_files", 512),) * 2)
    resource.setrlimit(resource.RLIMIT_SIGPENDING, (64, 64))
    resource.setrlimit(resource.RLIMIT_MSGQUEUE, (0, 0))
    resource.setrlimit(resource.RLIMIT_MEMLOCK, (0, 0))
    try:  # if the host runs out of memory, the kernel kills a sandbox first, never the grader
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass
    cpu = int(limits["total_seconds"]) + 5  # a backstop; the grader's wall clock rules
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # over-size writes fail, not kill


MEASURED_HEAP = (256 * 1024, 512 * 1024)
"""glibc's mmap and trim thresholds while a call is measured (``steady_heap``)."""
BETWEEN_HEAP = (4 << 20, 8 << 20)
"""... and at any other time: fewer fresh mappings, so faster; ``settle`` gives back what the
heap keeps before the next measured call."""


def steady_heap(mmap_threshold, trim_threshold):
    """glibc parks freed blocks in its heap, and by default raises its mmap threshold to the
    largest block freed (up to 32 MiB): fragmentation then inflates resident memory (3-5x for
    torch's allocation pattern). Fixed thresholds bound what the heap may keep. While a call
    is measured (``MEASURED_HEAP``) a block of 256 KiB or more is mapped and unmapped on its
    own and at most 512 KiB free at the heap's top stays, so the resident size the grader
    reads tracks live memory. Lower costs more than it measures: at 128 KiB (which also pins
    the trim threshold there) every 128 x 128 float64 tile is a fresh mapping, page faults and
    all, and the attention solution's four calls take 2 to 2.8 times as long as under glibc's
    default, against 1 to 3 % at 256 KiB (benchmarks/heap_thresholds.py). Higher lets
    activations stay in the heap: at 1 MiB, vram_trap's torch answer (0.5 MiB activations)
    failed its memory check (tests/answers/vram_trap/torch_checkpoint.py). Only ever makes the
    meter honest: the learner undoing it can only raise their own peak."""
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        libc.mallopt(-3, mmap_threshold)  # M_MMAP_THRESHOLD, fixed: no dynamic raise
        libc.mallopt(-1, trim_threshold)  # M_TRIM_THRESHOLD (fixing the first pins it at 128 KiB)
    except (OSError, AttributeError):  # not glibc: measured as is
        pass


class DeferredStartup:
    """A start-up file's import lines that bubblewrap masked (the grader's ``deferred_startup``),
    run right before learner code first imports ``trigger``: numba-cuda's redirector then
    costs nothing to a sandbox that never imports numba, and acts as it would have."""

    def __init__(self, trigger, code):
        self.trigger, self.code = trigger, code

    def find_spec(self, name, path=None, target=None):
        if name == self.trigger or name.startswith(self.trigger + "."):
            if self in sys.meta_path:
                sys.meta_path.remove(self)
                exec(compile(self.code, "<deferred start-up>", "exec"), {"__name__": "__deferred__"})
        return None


def defer_startup(deferred):
    for item in deferred:
        sys.meta_path.insert(0, DeferredStartup(str(item["trigger"]), str(item["code"])))


def settle():
    """Before a measured call: the measuring heap, and earlier garbage freed and given back
    (what the heap kept between calls included), so none of it is reused unseen."""
    import gc
    steady_heap(*MEASURED_HEAP)
    gc.collect()
    try:
        import ctypes
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def trace_start():
    """numpy's allocations (and Python's) traced for the call: the practice meter's number
    where the grader cannot read this process's memory (no /proc). Never tamper-proof."""
    import tracemalloc
    tracemalloc.start()
    return True


def trace_stop():
    import tracemalloc
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def describe_exception(exc):
    """Where in the learner's code it happened: the type name, the message, the ``cell`` (the
    name its code was compiled under: ``<submission>`` or ``<cell N>``) and the ``line`` in
    it; and ``stale``: the globals read on the way there that the learner's own calls
    rebound or filled since the code was loaded (state left behind by an earlier call)."""
    def learner(name):
        return name == SUBMISSION or (isinstance(name, str) and name.startswith("<cell "))

    cell = line = None
    if isinstance(exc, SyntaxError) and learner(exc.filename):
        cell, line = exc.filename, exc.lineno
    stale = []
    loaded = getattr(describe_exception, "loaded", None)  # set by each "load" (globals_state)
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if not learner(frame.f_code.co_filename):
            continue
        cell, line = frame.f_code.co_filename, lineno
        if loaded is None:
            continue
        for name in frame.f_code.co_names:  # the globals (and attributes) this code reads
            if name not in stale and not name.startswith("__") and name in frame.f_globals:
                try:
                    changed = _changed_since_load(frame.f_globals[name], loaded.get(name))
                except Exception:  # noqa: BLE001 (learner objects may refuse comparison)
                    changed = False
                if changed:
                    stale.append(name)
    message = str(exc.msg) if isinstance(exc, SyntaxError) and exc.msg else str(exc)  # no "(<cell 7>, line 3)"
    described = {"type": type(exc).__name__, "message": message[:400], "line": line, "cell": cell,
                 "stale": stale[:5]}
    return {**described, **system_error(exc)}


def system_error(exc):
    """What the grader needs to tell the sandbox's refusals from the learner's own errors
    (grader/sandbox/refusals.py): the errno and file of the first ``OSError`` in the chain,
    and ``library``: whether the innermost Python frame that raised is not the learner's."""
    frames = [frame for frame, _ in traceback.walk_tb(exc.__traceback__)]
    innermost = frames[-1].f_code.co_filename if frames else SUBMISSION
    found, seen = exc, 0
    while found is not None and not isinstance(found, OSError) and seen < 5:
        found, seen = found.__cause__ or found.__context__, seen + 1
    errno = getattr(found, "errno", None) if isinstance(found, OSError) else None
    filename = getattr(found, "filename", None) if isinstance(found, OSError) else None
    return {"errno": errno if isinstance(errno, int) else None,
            "filename": filename[:300] if isinstance(filename, str) else None,
            "library": not (innermost == SUBMISSION or str(innermost).startswith("<cell "))}


def globals_state(namespace):
    """The learner's globals as loading left them: each value, and for a small dict, list or
    set its items (kept by reference, compared by identity)."""
    state = {}
    for name, value in list(namespace.items()):
        items = None
        if isinstance(value, (dict, list, set)) and len(value) <= 10000:
            items = list(value.items()) if isinstance(value, dict) else list(value)
        state[name] = (value, items)
    return state


def _changed_since_load(value, loaded):
    if loaded is None:
        return True  # a global that only a call created
    old, items = loaded
    if value is not old:
        return True
    if items is None or len(value) != len(items):
        return items is not None
    if isinstance(value, dict):
        return any(k not in value or value[k] is not v for k, v in items)
    if isinstance(value, list):
        return any(a is not b for a, b in zip(value, items))
    return {id(x) for x in value} != {id(x) for x in items}


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


def isolate(setup):
    """The inner layers: seccomp (when bubblewrap did not load it), then Landlock. Returns
    what was applied, in words (read by the grader before any learner code has run)."""
    applied = []
    if setup.get("seccomp") is not None:  # no bubblewrap to load it: load it here, while
        try:                                # libseccomp can still be found and read
            seccomp.build(setup["seccomp"]["no_fork"], no_namespaces=True).load()
            applied.append("seccomp")
        except Exception as e:  # noqa: BLE001
            applied.append(f"no seccomp ({type(e).__name__})")
    try:
        abi = landlock.restrict(setup["read_only"] + [f"/proc/{os.getpid()}"], setup["read_write"])
        applied.append(f"landlock-abi-{abi}" if abi else "no landlock")
    except OSError as e:
        applied.append(f"no landlock ({e})")
    return ", ".join(applied)


def main():
    die_with_parent()
    setup = read_frame(REQ_FD)
    set_limits(setup["limits"])
    os.chdir(setup["tmpdir"])
    steady_heap(*BETWEEN_HEAP)
    isolation = isolate(setup) if setup.get("isolate", True) else "none"
    defer_startup(setup.get("deferred", ()))
    del setup  # nothing of the grader's set-up stays reachable from learner code
    sys.stdin = open(os.devnull)
    # "boot": when the worker began, had numpy, answered, and its CPU seconds (only ever shown
    # by the grader's profile, timeline.py: nothing the child says decides anything)
    wire.write_frame(RESP_FD, {"ok": True, "isolation": isolation,
                               "boot": BOOT + [time.monotonic(), time.process_time()]})

    namespace = {"__name__": "submission", "_grader_ask": ask}
    me = os.getpid()
    previous = None
    while True:
        if os.getpid() != me:  # a fork of the learner's that fell back into this loop: only
            os._exit(0)        # the worker itself reads requests and answers them
        try:
            req = read_frame(REQ_FD)
        except EOFError:
            return
        op = req.get("op")
        measured = previous == "settle"  # the grader settles the child right before each measured call
        previous = op
        start = time.perf_counter()
        reply = {"ok": True}
        try:
            if op == "load":
                # One cell (or a .py file, or the grader's helpers) under its own name, e.g.
                # "<cell 7>": a traceback then says which cell. ``fallback`` is the cell with
                # IPython magics and shell lines blanked, compiled only if the cell as written
                # is not Python (a shell line never runs). The globals as loaded are kept:
                # a later call that fails reading one its calls changed is told so.
                name = req.get("name", SUBMISSION)
                try:
                    try:
                        code = compile(req["source"], name, "exec")
                    except SyntaxError:
                        if not req.get("fallback"):
                            raise
                        code = compile(req["fallback"], name, "exec")
                    exec(code, namespace)
                finally:
                    describe_exception.loaded = globals_state(namespace)
            elif op == "load_imports":
                # the memory baseline's code: the submission's import statements, found here
                # (parsing learner text costs the sandbox's memory and time, not the grader's)
                exec(compile(imports.import_lines(req["sources"]), "<imports>", "exec"), namespace)
            elif op == "settle":
                settle()
            elif op == "call":
                fn = namespace.get(req["fn"])
                if not callable(fn):
                    reply = {"ok": False, "kind": "missing"}
                else:
                    args = req["args"]
                    traced = measured and req.get("trace_memory") and trace_start()
                    try:
                        reply["value"] = fn(*args)
                    finally:
                        if traced:  # the practice meter where no /proc is readable: a number from here
                            reply["traced_peak"] = trace_stop()
                        if measured:  # the measured call is over: the faster heap again
                            steady_heap(*BETWEEN_HEAP)
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
        if os.getpid() != me:
            os._exit(0)
        for stream in (sys.stdout, sys.stderr):
            try:  # what it printed reaches the grader before the answer does
                stream.flush()
            except Exception:  # the learner may have closed or replaced it
                pass
        try:
            wire.write_frame(RESP_FD, reply)
        except wire.WireError as e:
            wire.write_frame(RESP_FD, {"ok": False, "kind": "bad_return", "message": str(e),
                                       "seconds": reply["seconds"]})
        # nothing of this request outlives it: a later measured call counts what is still held
        req = reply = args = fn = None


if __name__ == "__main__":
    main()
