"""The grader's launcher for a learner's CUDA kernels, in a child where none of the learner's
code has run (``source_child``); loaded there as text, after the race checker and
``kernel_source``.

``prepare()`` imports Numba's simulator and installs the race checker before any learner text
is read. ``take_source(cells, names)`` compiles the kernels ``names`` from the cells' text
(``kernel_source``): nothing the learner's module code made is ever called. ``launch(name,
blocks, threads, args)`` runs one on a 1-D grid inside ``race_checker.checking``, with the
grader's arrays copied to the device, and answers with plain data only: the arrays after the
launch, the exception a simulated thread raised, the checker's flags, how many threads ran,
and who wrote what (argument position, flat element, global thread index). The grader judges
all of it; nothing here decides points.
"""
import numpy as np

try:
    race_checker, kernel_source  # noqa: B018  (in the child the harness provides them)
except NameError:
    from backprop_traps.grader.sandbox import kernel_source
    from backprop_traps.grader.sandbox import race_checker

MAX_WRITES = 1 << 16
"""Distinct (argument, element, thread) writes sent back: far more than a graded launch makes."""
_kernels: dict = {}
_refused: dict = {}


def prepare() -> None:
    """The simulator and the race checker, in place before any learner text is read.

    The simulator starts an OS thread per CUDA thread, and this child's address space is capped
    (``source_child.MEMORY_MB``): each thread would otherwise reserve an 8 MiB stack and, once it
    allocates, a 64 MiB malloc arena of its own, so a launch of a few dozen threads (more where
    a kernel never ends and its threads stay) could not start under the cap. Simulated kernel
    code needs little stack, and two arenas serve threads that mostly wait on each other."""
    import ctypes
    import threading
    threading.stack_size(1 << 20)
    try:
        ctypes.CDLL(None).mallopt(-8, 2)  # M_ARENA_MAX (glibc); elsewhere nothing to do
    except (OSError, AttributeError):
        pass
    from numba import cuda  # noqa: F401  (NUMBA_ENABLE_CUDASIM=1: the sandbox sets it)
    race_checker.install()


def take_source(cells, names) -> dict:
    """Compile the kernels ``names`` from ``cells`` (``[label, source, fallback]``): for each, None
    when it compiled, else the sentence that says why not."""
    program = kernel_source.extract([tuple(cell) for cell in cells], [str(n) for n in names])
    _kernels.clear()
    _refused.clear()
    _refused.update(program.refused)
    try:
        _kernels.update(kernel_source.build(program))
    except Exception as exc:  # noqa: BLE001 (a def numba's simulator will not wrap)
        for name in program.kernels:
            _refused[name] = f"{name} could not be compiled: {type(exc).__name__}: {str(exc)[:200]}."
    return {name: _refused.get(name) for name in names}


def launch(name, blocks, threads, args) -> dict:
    """Run kernel ``name`` as ``[blocks, threads]`` on ``args`` (arrays go to the device)."""
    if name in _refused or name not in _kernels:
        return {"refused": _refused.get(name, f"{name} was not compiled.")}
    from numba import cuda
    blocks, threads = int(blocks), int(threads)
    device = [cuda.to_device(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a for a in args]
    error = None
    with race_checker.checking(keep_writes=True) as log:
        try:
            _kernels[name][blocks, threads](*device)
        except Exception as exc:  # noqa: BLE001 (a simulated thread's exception: the kernel's)
            error = f"{type(exc).__name__}: {str(exc)[:300]}"
    writes = sorted((position, flat, block[0] * threads + thread[0])
                    for position, flat, block, thread in log.writes)[:MAX_WRITES]
    return {"error": error, "launches": log.launches, "threads": log.threads,
            "flags": [{k: f[k] for k in ("kind", "array", "index", "message")} for f in log.flags],
            "arrays": [d.copy_to_host() if hasattr(d, "copy_to_host") else None for d in device],
            "writes": np.array(writes, dtype=np.int64).reshape(-1, 3)}
