"""What the Numba CUDA simulator says about each kernel's memory traffic, without a GPU.

Run: python benchmarks/simulated_facts.py  (prints one JSON object; benchmarks/kernels_static.py
runs it in a child process, since the simulator must be chosen before numba.cuda loads).

Per kernel (``module.function``, as benchmarks/kernels_static.py names it):
  loads_per_element, stores_per_element
      global-memory element reads and writes the simulator saw in the kernel's TINY float32
      launches (float64 for question 20), divided by the size of the largest array it was
      given or by the threads that touched memory, whichever is larger (at TINY a block of
      256 threads can outnumber its row's elements, and what each thread reads once would
      count as per-element work): what the algorithm reads and writes per element, whatever the
      code's load widths. The max-pool gather backward reads argmax and dout about 1.7 times
      per input at k3 s2; an elementwise op reads each input once.
  arrays_read
      how many distinct arrays one launch read: the least loads per element a pass needs.
  compute
      True when a case with a flop count launches it (conv, linear, attention, JVP/VJP, matmul):
      a compute-bound loop, judged by GFLOP/s rather than bandwidth.
  threads_large, elements_large
      the threads its LARGE launch starts and the size of its largest array (a dry run,
      kernels/runtime/dry_run.py): too few threads to fill a GPU (132 SMs x 2,048 on an H100 or H200)
      and bandwidth cannot be reached; their ratio says whether work done once per thread
      (an index's 64-bit division) is done once per element.
"""
from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script from a checkout: make `backprop_traps` importable
    sys.path.insert(0, str(REPO))


def kernel_key(py_func) -> str:
    """``module.function`` of a kernel, a solution notebook's module without its prefix (and a
    shared module, kernels/common/, without its folder: ``tiled_matmul.matmul_kernel``)."""
    module = (py_func.__module__.removeprefix("backprop_traps.kernels.").removeprefix("common.")
              .removeprefix("reference_"))
    return f"{module}.{py_func.__name__}"


def access_counts() -> dict:
    """kernel -> {"loads", "stores", "elements", "arrays_read"} over its TINY launches."""
    import numpy as np
    from numba.cuda.simulator import kernel as sim_kernel
    from numba.cuda.simulator.cudadrv import devicearray
    from backprop_traps.kernels import cases

    counts, lock, current = {}, threading.Lock(), {}
    array_class = devicearray.FakeWithinKernelCUDAArray
    getitem, setitem, call = array_class.__getitem__, array_class.__setitem__, sim_kernel.FakeCUDAKernel.__call__

    def tally(ary, field):
        entry = current.get("entry")
        if entry is not None:
            with lock:
                entry[field] += 1
                me = threading.current_thread()  # a BlockThread: one CUDA thread of the launch
                entry["active"].add((tuple(me.blockIdx), tuple(me.threadIdx)))
                if field == "loads":
                    entry["read"].add(id(ary))

    def counted_getitem(self, idx):
        tally(self._item._ary, "loads")
        return getitem(self, idx)

    def counted_setitem(self, idx, value):
        tally(self._item._ary, "stores")
        return setitem(self, idx, value)

    def counted_call(self, *args):
        if self._device or current.get("entry") is not None:
            return call(self, *args)
        entry = counts.setdefault(kernel_key(self.fn), {"loads": 0, "stores": 0, "elements": 0, "arrays": 0,
                                                        "compute": False})
        entry["compute"] |= bool(current.get("flops"))
        sizes = [a.size for a in args if hasattr(a, "size") and getattr(a, "ndim", 0) > 0]
        current["entry"], entry["read"], entry["active"] = entry, set(), set()
        try:  # the simulator runs one block at a time, a Python thread per CUDA thread
            return call(self, *args)
        finally:
            current["entry"] = None
            entry["arrays"] = max(entry["arrays"], len(entry.pop("read")))
            entry["elements"] += max(max(sizes, default=1), len(entry.pop("active")))

    array_class.__getitem__, array_class.__setitem__ = counted_getitem, counted_setitem
    sim_kernel.FakeCUDAKernel.__call__ = counted_call
    try:
        for question in cases.QUESTIONS:
            dtype = np.float64 if question == "maxpool_kernel" else np.float32
            for case in cases.build_cases("tiny", dtype, questions=(question,)):
                current["flops"] = case.flops
                case.launch()
    finally:
        array_class.__getitem__, array_class.__setitem__ = getitem, setitem
        sim_kernel.FakeCUDAKernel.__call__ = call
    return {k: {**{f: v[f] for f in ("loads", "stores", "elements", "compute")}, "arrays_read": v["arrays"]}
            for k, v in counts.items()}


def large_threads() -> dict:
    """kernel -> (threads, elements) of its largest LARGE launch: the threads it starts and the
    size of its largest array (a dry run: nothing runs, nothing is allocated)."""
    import numpy as np
    from backprop_traps.kernels import cases
    from backprop_traps.kernels.runtime.dry_run import dry_run
    threads = {}
    for question in cases.QUESTIONS:
        dtype = np.float64 if question == "maxpool_kernel" else np.float32
        with dry_run() as run:
            for case in cases.build_cases("large", dtype, questions=(question,), dry=True):
                case.launch()
        for launch in run.launches:
            name = launch.kernel.removeprefix("reference_")
            n = 1
            for g, b in zip(launch.grid, launch.block):
                n *= g * b
            threads[name] = max(threads.get(name, (0, 0)), (n, launch.elements))
    return threads


def facts() -> dict:
    counts, threads = access_counts(), large_threads()
    out = {}
    for name in sorted(set(counts) | set(threads)):
        c = counts.get(name)
        out[name] = dict(zip(("threads_large", "elements_large"), threads.get(name, (None, None))))
        if c and c["elements"]:
            out[name].update(loads_per_element=round(c["loads"] / c["elements"], 2),
                             stores_per_element=round(c["stores"] / c["elements"], 2),
                             arrays_read=c["arrays_read"], compute=c["compute"])
    return out


if __name__ == "__main__":
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        os.execv(sys.executable, [sys.executable, *sys.argv])  # numba.cuda must load as the simulator
    print(json.dumps(facts()))
