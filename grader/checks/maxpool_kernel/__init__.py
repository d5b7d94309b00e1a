"""Hidden checks for maxpool_kernel: max-pool's backward as a Numba CUDA kernel, twice.

The learner writes a scatter (one thread per output, cuda.atomic.add at the argmax) and a
gather (one thread per input, summing the covering windows it won). The grader never calls
the kernel objects the learner's code built: a child of its own, in which none of the
learner's code runs, compiles both kernels from the submission's source and launches each on
a 1-D grid whose block size the check picks (a multiple of the array's size where the check is
about values, not one where it is about bounds guards), under Numba's CUDA simulator and the
race checker (probes.source_harness). Values are compared here with the exact dx
(probes.backward); races, out-of-bounds accesses and overwrites are named from the checker's
log (traps.from_report), and a thread that writes what another thread owns from who wrote
what (probes.stray_write). Shapes: dout, argmax (N, C, Ho, Wo); dx (N, C, H, W).
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.checks.maxpool_kernel import probes
from backprop_traps.grader.checks.maxpool_kernel.traps import TRAPS, first_window_only, from_report, last_window_only
from backprop_traps.grader.engine.question import Fail, Question
from backprop_traps.grader.sandbox.inert import inert

QUESTION = Question("maxpool_kernel", "Max-pool backward as a CUDA kernel, twice: a scatter with "
                    "atomics and a deterministic gather", traps=TRAPS, difficulty="hard",
                    source_harness=probes.source_harness,
                    kinks={"block-edge": "a size that is not a multiple of the block: the last block's guard"},
                    axes={name: ("example n", "channel c", "row", "column") for name in ("dx", "out", "argmax")})

KERNEL = probes.KERNELS
FROM_SOURCE = ("The grader compiles your kernels itself, from their source, in a process where none of "
               "your other code runs (docs/questions/maxpool_kernel.md says what a kernel may use).")


def grader_failed(ctx, why: str):
    """Fail as the grader's error (never the answer's), saying why."""
    hint = ""
    if "no bubblewrap" in str(getattr(ctx.sandbox, "isolation", "")):
        hint = (" Without bubblewrap numba-cuda does not import under the fallback's file rules, so "
                "maxpool_kernel's kernels cannot be graded on this machine: grade them where bubblewrap "
                "runs (`grade doctor` says which layers this machine gives).")
    return Fail(f"The grader could not run your kernels: {why}.{hint} This is the grader's failure, "
                "not your answer's.", grader_error=True)


def run_kernel(ctx, which, blocks, threads, args) -> dict:
    """The grader's launch of the learner's kernel ``which``: its report (plain data), or Fail."""
    name = KERNEL[which]
    result = ctx.harness("_grader_launch", name, blocks, threads, args, key=which)
    if not result.ok:
        if result.kind == "harness":
            raise grader_failed(ctx, result.error)
        if result.kind == "timeout":
            raise Fail(f"{name} did not finish within {ctx.sandbox.limits.call_seconds:g} s under the "
                       f"simulator (launched as [{blocks}, {threads}]): an endless loop, or far too slow.")
        raise Fail(result.error)
    report = result.value
    if not isinstance(report, dict):
        raise Fail("the grader's launcher did not answer: was `_grader_launch` replaced?")
    if report.get("refused"):
        raise Fail(f"{inert(report['refused'], 700)} {FROM_SOURCE}")
    return report


def launch(ctx, which, threads, dout, argmax, shape, k, s, exact=False):
    """The learner's kernel run once by the grader: dx if it is right, else Fail naming the trap."""
    name, gather = KERNEL[which], which == "gather"
    total = int(np.prod(shape)) if gather else int(dout.size)
    blocks = max(1, -(-total // threads))
    dx = np.full(shape, np.nan) if gather else np.zeros(shape)
    args = [np.ascontiguousarray(dout), np.ascontiguousarray(argmax), dx] + ([int(k), int(s)] if gather else [])
    report = run_kernel(ctx, which, blocks, threads, args)
    trap = from_report(report)
    flags = [f for f in report.get("flags") or [] if isinstance(f, dict)]
    seen = "; ".join(inert(f.get("message", ""), 300) for f in flags[:2])
    if report.get("error"):
        what = f"{name} raised {inert(report['error'], 400)}"
        if "NotImplementedError" in str(report["error"]):
            raise Fail(f"{name} is not implemented yet (it raises NotImplementedError).")
        if trap:
            raise Fail(f"{what}. {ctx.question.trap(trap).explanation}", trap)
        raise Fail(f"{what} (launched as [{blocks}, {threads}]).")
    if report.get("launches") != 1 or report.get("threads") != blocks * threads:
        raise grader_failed(ctx, f"the launch [{blocks}, {threads}] ran {report.get('threads')} threads, "
                                 f"not {blocks * threads}")
    expected = probes.backward(dout, argmax, shape)
    if trap is not None:
        raise Fail(f"The race checker saw, in {name}: {seen}. {ctx.question.trap(trap).explanation}", trap)
    writes = report.get("writes")
    if not isinstance(writes, np.ndarray) or writes.ndim != 2 or writes.shape[1] != 3:
        raise grader_failed(ctx, "its launcher sent no record of who wrote what")
    stray = probes.stray_write(writes, which, argmax, shape)
    if stray:
        raise Fail(f"In {name}, {stray}.")
    if flags:  # a flag with no trap of its own (a divergent barrier, shared memory read unwritten)
        raise Fail(f"The race checker saw, in {name}: {seen}.")
    arrays = report.get("arrays")
    got = ctx.as_array("dx", arrays[2] if isinstance(arrays, list) and len(arrays) > 2 else None, expected, name)
    if exact and np.array_equal(got, expected):
        return got
    if exact and ctx.close(got, expected):  # off by rounding only: a narrower accumulator
        at = np.unravel_index(int(np.argmax(np.abs(got - expected))), got.shape)
        raise Fail(f"`dx` from {name} is not exact: on these gradients (multiples of 2**-30) every "
                   "sum is exact in float64 whatever its order, and yours differs from it by up to "
                   f"{np.max(np.abs(got - expected)):.3g} (at [{', '.join(map(str, at))}]: expected "
                   f"{expected[at]!r}, yours {got[at]!r}). Accumulate in float64 (the dtype of dout), "
                   "never in float32.")
    # beyond rounding: what is wrong is not the accumulator's precision; told as any wrong dx
    wrongs = {"lost-overlap": [first_window_only(dout, argmax, shape, k, s),
                               last_window_only(dout, argmax, shape, k, s)]}
    return ctx.expect_array("dx", got, expected, name, traps=wrongs,
                            example=lambda: f"{probes.wins(argmax, shape)} inputs here won more than one window.")


@QUESTION.check("scatter kernel: each gradient reaches its window's winner (no overlap)", points=2, hints=(
    "One thread per element of dout: unravel cuda.grid(1) to (n, c, ho, wo), read argmax there.",
    "argmax is h * W + w inside the plane: divmod by W gives the input's row and column.",
))
def scatter_no_overlap(ctx):
    shape, k, s = (2, 2, 4, 8), 2, 2          # dout: 32 elements (H != W), two blocks of 16
    dout, argmax = probes.case(ctx.rng, shape, k, s)
    launch(ctx, "scatter", 16, dout, argmax, shape, k, s)


@QUESTION.check("scatter kernel: overlapping windows", points=3, hints=(
    "With stride 1 and 3x3 windows a local maximum wins up to nine windows: nine threads add into one dx element.",
    "A plain += is a read, an add and a write: two threads can both read the old value.",
    "cuda.atomic.add(dx, (n, c, h, w), value) makes the read-add-write indivisible.",
))
def scatter_overlap(ctx):
    shape, k, s = (1, 2, 8, 8), 3, 1          # dout: 72 elements, three blocks of 24
    dout, argmax = probes.case(ctx.rng, shape, k, s)
    launch(ctx, "scatter", 24, dout, argmax, shape, k, s)


@QUESTION.check("gather kernel: overlapping windows", points=3, hints=(
    "One thread per element of dx: visit only the windows that cover (h, w), and keep those whose argmax is h * W + w.",
    "Window ho covers rows ho * s to ho * s + k - 1: ho runs from ceil((h - k + 1) / s), at least 0, to h // s, at most Ho - 1.",
    "Write dx once, at the end, even when the sum is zero: the grader fills dx with NaN first.",
))
def gather_overlap(ctx):
    shape, k, s = (1, 2, 9, 8), 3, 2          # dx: 144 elements, three blocks of 48
    dout, argmax = probes.case(ctx.rng, shape, k, s)
    launch(ctx, "gather", 48, dout, argmax, shape, k, s)


@QUESTION.check("bounds guards: sizes that are not a multiple of the block", points=2, kinks=("block-edge",), hints=(
    "A launch of ceil(size / threads) blocks has threads past the end in its last block.",
    "Compare cuda.grid(1) with dout.size (scatter) or dx.size (gather) and return when it is past the end.",
))
def bounds_guards(ctx):
    shape, k, s = (1, 1, 7, 9), 3, 2          # dout: 12 elements, dx: 63, blocks of 32
    dout, argmax = probes.case(ctx.rng, shape, k, s)
    for which in ("scatter", "gather"):
        launch(ctx, which, 32, dout, argmax, shape, k, s)


@QUESTION.check("gather and scatter agree to the last bit in float64", points=1, hints=(
    "On these gradients every sum is exact in float64: any float32 step shows.",
    "Start the gather's sum from the float64 literal 0.0 and add dout as it is: no float32 step anywhere.",
))
def agree_to_the_last_bit(ctx):
    shape, k, s = (1, 1, 8, 8), 3, 1          # dout: 36 (blocks of 24), dx: 64 (of 32); one channel is enough
    dout, argmax = probes.case(ctx.rng, shape, k, s, exact=True)
    scatter = launch(ctx, "scatter", 24, dout, argmax, shape, k, s, exact=True)
    gather = launch(ctx, "gather", 32, dout, argmax, shape, k, s, exact=True)
    if not np.array_equal(scatter, gather):  # both equal the exact dx, so this cannot happen
        raise Fail("The scatter and the gather differ.")


@QUESTION.check("host functions launch the kernels: numpy in, numpy out", points=1, hints=(
    "Copy dout and argmax to the device, make dx (zeros for the scatter), launch ceil(size / threads) blocks, copy dx back.",
))
def host_functions(ctx):
    ready = ctx.harness_ready()  # a sandbox level that cannot run numba fails the kernels' loading too
    if ready is not None and not ready.ok and ready.kind == "harness":
        raise grader_failed(ctx, ready.error)
    shape, k, s = (1, 2, 6, 7), 3, 2
    dout, argmax = probes.case(ctx.rng, shape, k, s)
    expected = probes.backward(dout, argmax, shape)
    for fn in ("maxpool2d_backward_scatter", "maxpool2d_backward_gather"):
        ctx.expect_array("dx", ctx.call(fn, dout, argmax, shape, k, s), expected, fn)
    for which in ("scatter", "gather"):  # what the host functions launched, as a GPU computes it
        same_on_a_gpu(ctx, which, dout, argmax, shape, k, s, expected)


def same_on_a_gpu(ctx, which, dout, argmax, shape, k, s, expected) -> None:
    """The host functions ran the learner's kernels in the learner's own process, under the
    simulator's unbounded integers; a GPU computes them at 64 bits. So their dx counts only when
    the grader's own compile of the same kernel (integers at the GPU's widths: sandbox/
    kernel_integers.py) gives it too. Values only: races are the kernels' own checks' business."""
    name, gather = KERNEL[which], which == "gather"
    total = int(np.prod(shape)) if gather else int(dout.size)
    dx = np.full(shape, np.nan) if gather else np.zeros(shape)
    args = [np.ascontiguousarray(dout), np.ascontiguousarray(argmax), dx] + ([int(k), int(s)] if gather else [])
    report = run_kernel(ctx, which, max(1, -(-total // 32)), 32, args)
    arrays = report.get("arrays")
    got = arrays[2] if isinstance(arrays, list) and len(arrays) > 2 else None
    if report.get("error") or not (isinstance(got, np.ndarray) and got.shape == expected.shape
                                   and np.allclose(got, expected, rtol=1e-9, atol=1e-12)):
        raise Fail(f"{name}, compiled with a GPU's 64-bit integers (as numba types them), does not give "
                   "this dx, so the host functions would not either on a GPU: Python's unbounded integers "
                   "under the simulator hid it. Keep index arithmetic within int64 (no shifts or products "
                   "that overflow).")
