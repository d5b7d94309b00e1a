"""A race and barrier checker for kernels run under the Numba CUDA simulator.

The simulator runs each CUDA thread as a Python thread, so a data race only shows when the
schedule happens to interleave the threads badly. This checker logs every access instead:
each thread's reads and writes of the kernel's array arguments (global memory) and of its
``cuda.shared.array``s, with the thread, its block and how many barriers it has passed, then
flags what a GPU would get wrong whatever the schedule:

- ``write-write`` / ``read-write``: two threads touch one element, at least one writes, not
  both through ``cuda.atomic``, and nothing orders them (other blocks are never ordered; in
  one block, only a ``syncthreads`` both have passed between the accesses orders them). An
  ``atomic.exch`` stores rather than updates: beside another thread's write to the element,
  the last writer wins whatever the schedule, so it counts as a plain store there;
- ``divergent-barrier``: a ``syncthreads`` reached by only some threads of a block (the
  simulator lets the others finish; a GPU may hang or corrupt shared memory);
- ``uninitialised-shared``: a shared-memory element read before any thread wrote it;
- ``negative-index``: an index below zero, which numpy wraps around silently (the simulator
  reads the end of the array) and a GPU reads outside it.

Use: ``install()`` once, after the simulator is chosen (NUMBA_ENABLE_CUDASIM=1), then::

    with checking() as log:
        kernel[blocks, threads](...)
    log.flags  # [{"kind", "kernel", "array", "index", "threads", "line", "message"}, ...]
    log.threads  # how many simulated threads the launches started

``checking(keep_writes=True)`` also keeps ``log.writes``: (argument position, flat element,
block, thread) of every write to a kernel argument, for a launcher that checks who owns what.

tests/conftest.py runs every kernel test inside ``checking()``; for maxpool_kernel the grader's
own child (grader/sandbox/source_child.py) loads this file's source and installs it before it
reads any learner text, then compiles and launches the learner's kernels under it: nothing of
the learner's runs there before the checker, and a kernel cannot name it.
It imports only numpy and numba, so it can run where the kit itself is not importable.
"""
import contextlib
import inspect
import sys
import threading

import numpy as np

_stack = []  # the logs of the checking() blocks in force, innermost last
_local = threading.local()  # .atomic: the cuda.atomic operation this thread is inside, or False


class Log:
    """What one ``checking()`` block saw: ``flags`` (dicts, one per problem found, at most
    ``limit``), ``launches``, ``threads`` and ``accesses`` (how much was checked), and with
    ``keep_writes`` the set ``writes`` of (argument position, flat element, block, thread)."""

    def __init__(self, limit=50, keep_writes=False):
        self.flags, self.launches, self.threads, self.accesses, self.limit = [], 0, 0, 0, limit
        self.writes = set() if keep_writes else None
        self._seen = set()

    def flag(self, kind, kernel, array, index, threads, line, message):
        key = (kind, kernel, array, line)
        if key in self._seen or len(self.flags) >= self.limit:
            return
        self._seen.add(key)
        self.flags.append({"kind": kind, "kernel": kernel, "array": array, "index": list(index),
                           "threads": [list(t) for t in threads], "line": line,
                           "message": f"{kernel}: {message}"})


@contextlib.contextmanager
def checking(limit=50, keep_writes=False):
    """Check every simulated launch inside the block; the flags land in the yielded Log only
    (an enclosing block does not see them)."""
    log = Log(limit, keep_writes)
    _stack.append(log)
    try:
        yield log
    finally:
        _stack.remove(log)


class _Launch:
    """The accesses of one kernel launch:
    (space, address, thread, block, epoch, write, atomic, line, value written or None)."""

    def __init__(self, name, arrays):
        self.name, self.arrays = name, arrays  # arrays: [(start, end, label, itemsize, shape, position)]
        self.accesses, self.threads, self.negative = [], [], []
        self._bases = {}  # id(array) -> (array, its start address): kept alive, so no id is reused

    def base(self, ary):
        """The start address of ``ary`` (read once a launch: ``__array_interface__`` builds a dict)."""
        entry = self._bases.get(id(ary))
        if entry is None or entry[0] is not ary:
            entry = self._bases[id(ary)] = (ary, ary.__array_interface__["data"][0])
        return entry[1]

    def label(self, address):
        for start, end, label, itemsize, shape, _ in self.arrays:
            if start <= address < end:
                flat = (address - start) // itemsize
                return label, tuple(int(i) for i in np.unravel_index(flat, shape))
        return "an array", ()

    def element(self, address):
        """(argument position, flat element index) of a global address, or None."""
        for start, end, _, itemsize, _, position in self.arrays:
            if start <= address < end:
                return position, (address - start) // itemsize
        return None


_launch = None  # the launch being checked (the simulator runs one at a time)


def _kernel_line():
    """The line of the kernel (or device function) making the current access."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename in _SKIP_FILES:
        frame = frame.f_back
    return f"line {frame.f_lineno}" if frame is not None else "?"


_SKIP_FILES = {_kernel_line.__code__.co_filename}  # this file (also when loaded from source), the simulator's


def _addresses(ary, idx, base):
    """The start addresses of the elements ``ary[idx]`` names (``base``: where ``ary`` starts),
    and whether an index was negative."""
    if type(idx) is int or isinstance(idx, np.integer):
        if ary.ndim == 1:  # a flat array and one index, as most kernels here: the fast way
            i = int(idx)
            return ([base + (i % ary.shape[0]) * ary.strides[0]], True) if i < 0 else ([base + i * ary.strides[0]], False)
        idx = (idx,)
    elif not isinstance(idx, tuple):
        idx = (idx,)
    if len(idx) == ary.ndim:
        offset, negative = 0, False
        for i, n, stride in zip(idx, ary.shape, ary.strides):
            if type(i) is not int and not isinstance(i, np.integer):
                break  # a slice: the general way below
            i = int(i)
            if i < 0:
                negative, i = True, i % n
            offset += i * stride
        else:
            return [base + offset], negative
    view = ary[idx]
    if not isinstance(view, np.ndarray):
        return [], False
    start = view.__array_interface__["data"][0]
    return [start + sum(i * s for i, s in zip(pos, view.strides)) for pos in np.ndindex(view.shape)], False


def _record(space, ary, idx, write):
    """Log one access; ``write`` is False for a read, else the value written (a plain store of
    one value by many threads, as a found-inf flag, is benign; a read next to it is not)."""
    launch = _launch
    if launch is None:
        return
    thread = threading.current_thread()
    who = thread.__dict__.get("_race_who")  # (block, thread): fixed for a simulated thread's life
    if who is None:
        if not hasattr(thread, "threadIdx"):
            return
        who = thread._race_who = (tuple(thread.blockIdx), tuple(thread.threadIdx))
    addresses, negative = _addresses(ary, idx, launch.base(ary))
    line = _kernel_line()
    if negative:
        launch.negative.append((space, addresses[0], who, line, idx))
    atomic = getattr(_local, "atomic", False)
    epoch = getattr(thread, "_race_epoch", 0)
    value = None
    if write is not False:
        value = write.item() if isinstance(write, np.generic) else write
        value = value if isinstance(value, (int, float, bool)) else object()  # arrays: never "the same"
        write = True
    for address in addresses:
        launch.accesses.append((space, address, who[1], who[0], epoch, write, atomic, line, value))


class _SharedArray:
    """A shared array that logs its element accesses (the simulator hands out a plain ndarray)."""

    def __init__(self, ary, site):
        self._ary, self._site = ary, site

    def __getitem__(self, idx):
        _record(self._site, self._ary, idx, False)
        return self._ary[idx]

    def __setitem__(self, idx, value):
        _record(self._site, self._ary, idx, value)
        self._ary[idx] = value

    def __len__(self):
        return len(self._ary)

    def __getattr__(self, name):
        return getattr(self._ary, name)


def _analyse(launch, log):
    name = launch.name
    for space, address, who, line, idx in launch.negative:
        label = launch.label(address)[0] if space == "global" else f"shared array ({space})"
        index = tuple(int(i) for i in (idx if isinstance(idx, tuple) else (idx,)))
        log.flag("negative-index", name, label, index, [who[1]], line,
                 f"thread {who[1]} of block {who[0]} reads or writes {label}{list(index)} at {line}: a negative "
                 "index wraps around in numpy but reads outside the array on a GPU (a missing bounds check?)")
    by_address = {}
    for access in launch.accesses:  # shared memory is per block: its addresses too
        key = (access[0], access[1], None if access[0] == "global" else access[3])
        by_address.setdefault(key, []).append(access)
    for (space, address, _), accesses in by_address.items():
        label, index = launch.label(address) if space == "global" else (f"shared array ({space})", ())
        if space != "global":
            _uninitialised(accesses, name, label, log)
        _conflict(accesses, space, name, label, index, log)
    for block, threads in _by_block(launch.threads).items():
        sequences = {}
        for thread in threads:
            sequences.setdefault(tuple(thread.__dict__.get("_race_barriers", ())), []).append(
                tuple(thread.threadIdx))
        if len(sequences) > 1:
            (most, _), (other, who) = sorted(sequences.items(), key=lambda kv: -len(kv[1]))[:2]
            first = next((i for i, (a, b) in enumerate(zip(most, other)) if a != b), min(len(most), len(other)))
            site = (most + ("",))[first] or other[first]
            log.flag("divergent-barrier", name, "syncthreads", (), who[:2], site,
                     f"in block {block}, {len(who)} thread(s) (e.g. {who[0]}) pass {len(other)} syncthreads "
                     f"where the others pass {len(most)} (first difference: {site}): every thread "
                     "of a block must reach every syncthreads, or a GPU may hang")


def _by_block(threads):
    blocks = {}
    for thread in threads:
        blocks.setdefault(tuple(thread.blockIdx), []).append(thread)
    return blocks


def _stores(access):
    """A write whose result is the value it writes, whatever was there: a plain store or an
    ``atomic.exch`` (an atomic add's write is an update: two of them commute)."""
    return access[5] and access[6] in (False, "exch")


def _conflict(accesses, space, name, label, index, log):
    writes = ([a for a in accesses if a[5] and not a[6]] or [a for a in accesses if _stores(a)]
              or [a for a in accesses if a[5]])
    if not writes or all(a[6] and not _stores(a) for a in accesses):
        return
    for w in writes:
        for a in accesses:
            if a[2] == w[2] and a[3] == w[3]:
                continue  # the same thread
            if w[6] and a[6] and not (a[5] and (_stores(w) or _stores(a))):
                continue  # two atomics that commute (an exch's own read is atomic too)
            if space != "global" and a[4] != w[4]:
                continue  # a syncthreads between them
            if space == "global" and a[3] == w[3] and a[4] != w[4]:
                continue
            if _stores(a) and _stores(w) and a[8] == w[8]:
                continue  # both store the same value: benign (as a found-inf flag set by many threads)
            kind = "write-write" if a[5] else "read-write"
            where = f"{label}{list(index)}" if index else label
            how = ("one of them through cuda.atomic.exch, which stores: the last writer wins"
                   if "exch" in (a[6], w[6]) else "not both through cuda.atomic")
            log.flag(kind, name, label, index, [w[2], a[2]], w[7],
                     f"threads {w[2]} (block {w[3]}) and {a[2]} (block {a[3]}) both "
                     f"{'write' if a[5] else 'touch'} {where} ({w[7]} and {a[7]}) with nothing "
                     f"ordering them and {how}: the result depends on the schedule")
            return


def _uninitialised(accesses, name, label, log):
    for a in accesses:  # in the order they happened
        if a[5]:
            return
        log.flag("uninitialised-shared", name, label, (), [a[2]], a[7],
                 f"thread {a[2]} of block {a[3]} reads {label} at {a[7]} before any thread wrote it")
        return


def install():
    """Wrap the simulator's launch, array accesses, shared arrays, atomics and syncthreads.
    Idempotent; call it after NUMBA_ENABLE_CUDASIM=1 has chosen the simulator."""
    from numba.cuda.simulator import kernel as sim_kernel, kernelapi
    from numba.cuda.simulator.cudadrv import devicearray
    installed = sim_kernel.FakeCUDAKernel.__call__
    if getattr(installed, "_race_checked", False):
        global _stack
        _stack = installed._race_stack  # another copy of this file installed it: share its logs
        return
    _SKIP_FILES.update({devicearray.__file__, kernelapi.__file__, sim_kernel.__file__})
    array_class = devicearray.FakeWithinKernelCUDAArray
    getitem, setitem = array_class.__getitem__, array_class.__setitem__

    def checked_getitem(self, idx):
        _record("global", self._item._ary, idx, False)
        return getitem(self, idx)

    def checked_setitem(self, idx, value):
        _record("global", self._item._ary, idx, value)
        return setitem(self, idx, value)

    array_class.__getitem__, array_class.__setitem__ = checked_getitem, checked_setitem

    shared_array = kernelapi.FakeCUDAShared.array
    allocation_lock = threading.Lock()

    def checked_shared(self, shape, dtype, *rest):
        if shape == 0 or (rest and rest[0] is not None):  # dynamic or aligned: as the simulator does
            return shared_array(self, shape, dtype, *rest)
        # The simulator keys an allocation by its caller's line, which a wrapper would hide:
        # the same logic here, on the kernel's line, under a lock (see kernels/runtime/simulator_fixes.py).
        from numba.core import types
        from numba.np import numpy_support
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        frame = sys._getframe(1)
        caller = (frame.f_code.co_filename, frame.f_lineno)
        with allocation_lock:
            ary = self._allocations.get(caller)
            if ary is None:
                ary = self._allocations[caller] = np.empty(shape, dtype)
        if _launch is None:
            return ary
        return _SharedArray(ary, f"{frame.f_code.co_name} line {frame.f_lineno}")

    kernelapi.FakeCUDAShared.array = checked_shared

    for op in ("add", "sub", "and_", "or_", "xor", "inc", "dec", "exch", "max", "min",
               "nanmax", "nanmin", "cas"):
        setattr(kernelapi.FakeCUDAAtomic, op, _atomic(getattr(kernelapi.FakeCUDAAtomic, op)))

    syncthreads = sim_kernel.BlockThread.syncthreads

    def checked_syncthreads(self):
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename in _SKIP_FILES:
            frame = frame.f_back
        site = f"line {frame.f_lineno}" if frame is not None else "?"
        self.__dict__.setdefault("_race_barriers", []).append(site)
        syncthreads(self)
        self._race_epoch = getattr(self, "_race_epoch", 0) + 1

    sim_kernel.BlockThread.syncthreads = checked_syncthreads

    thread_init = sim_kernel.BlockThread.__init__

    def checked_thread_init(self, *args, **kwargs):
        thread_init(self, *args, **kwargs)
        if _launch is not None:
            _launch.threads.append(self)

    sim_kernel.BlockThread.__init__ = checked_thread_init

    call = sim_kernel.FakeCUDAKernel.__call__

    def checked_call(self, *args):
        global _launch
        if self._device or not _stack or _launch is not None:
            return call(self, *args)
        _launch = _Launch(self.fn.__name__, _argument_ranges(self.fn, args))
        try:
            return call(self, *args)
        finally:
            launch, _launch = _launch, None
            log = _stack[-1]
            log.launches += 1
            log.threads += len(launch.threads)
            log.accesses += len(launch.accesses)
            _analyse(launch, log)
            if log.writes is not None:
                _keep_writes(launch, log)

    checked_call._race_checked, checked_call._race_stack = True, _stack
    sim_kernel.FakeCUDAKernel.__call__ = checked_call


def _keep_writes(launch, log):
    for space, address, thread, block, _, write, _, _, _ in launch.accesses:
        element = launch.element(address) if space == "global" and write else None
        if element is not None:
            log.writes.add(element + (block, thread))


_INTEGERS = ("int32", "uint32", "int64", "uint64")
ATOMIC_DTYPES = {**dict.fromkeys(("add", "sub", "max", "min", "nanmax", "nanmin"), ("float64", "float32") + _INTEGERS),
                 **dict.fromkeys(("and_", "or_", "xor", "exch", "cas", "compare_and_swap"), _INTEGERS),
                 "inc": _INTEGERS[1::2], "dec": _INTEGERS[1::2]}
"""The array dtypes numba-cuda compiles each atomic for (numba/cuda/cudadecl.py): the simulator
runs any of them on any array, a GPU build refuses the rest (a float64 ``exch`` or ``cas``)."""


def _atomic(op):
    def checked(self, *args):
        dtype = str(getattr(args[0], "dtype", "")) if args else ""
        allowed = ATOMIC_DTYPES.get(op.__name__)
        if allowed and dtype and dtype not in allowed:
            raise TypeError(f"cuda.atomic.{op.__name__} on a {dtype} array does not compile for a GPU: "
                            f"numba-cuda has it for {', '.join(allowed)} arrays only")
        _local.atomic = op.__name__
        try:
            return op(self, *args)
        finally:
            _local.atomic = False
    checked.__name__ = op.__name__
    return checked


def _argument_ranges(fn, args):
    """(start, end, name, itemsize, shape, position) of each array argument's memory, named as
    the kernel names it."""
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = []
    ranges = []
    for i, arg in enumerate(args):
        ary = getattr(arg, "_ary", arg)
        if isinstance(ary, np.ndarray) and ary.ndim > 0 and ary.size:
            start = ary.__array_interface__["data"][0]
            name = names[i] if i < len(names) else f"argument {i}"
            ranges.append((start, start + ary.nbytes, name, ary.itemsize, ary.shape, i))
    return ranges
