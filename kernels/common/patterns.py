"""The patterns the fast kernels share (issue 34): flat unsigned offsets, 128-bit loads and
stores, and warp-shuffle sums. Each is a device function, so a kernel reads as its math.

Why each one pays, on a GPU:
- ``u64`` and ``flat4``: Numba indexes an (N, C, H, W) array with signed 64-bit integers,
  so every ``x[n, c, h, w]`` costs a stride multiply per axis and, per axis, a check that
  wraps a negative index around. A flat array indexed with an unsigned offset is one add
  and one load: issue 34 measured the max-pool forward at 0.69x PyTorch with a 3-D grid,
  and 1.06x once the same kernel read a flat array with ``uint64`` offsets. Keep every
  index term unsigned (``u64(...)`` on anything signed): numba-cuda types uint64 * int64 as
  int64, with the wraparound back (numpy, and so the simulator, as float64, which fails), and
  compares uint64 with int64 as float64: compare signed positions with ``i64(size)``.
- ``load4`` / ``store4``: four neighbouring elements in 128-bit transactions (one
  ``ld.global.v4.f32``, or two ``.v2.f64``; float16's four are one 64-bit ``.v4.f16``): a
  quarter of the load instructions, which is what a device-to-device copy does. On a GPU they
  read the array's memory from its start, flat: the array must be contiguous (its strides are
  not looked at), the offset a multiple of 4, and the start aligned to the vector's size,
  ``vector_bytes``: 16 bytes, 8 for 16-bit types (each instruction claims exactly that much
  alignment, no more, so the compiler cannot widen two 64-bit vectors into a 128-bit one that
  only 8 bytes of alignment would fault). ``aligned(...)`` checks device arrays on the host
  (every allocation is; a slice may not be, a strided view never is). The simulator runs
  plain element loads and refuses what a GPU would get wrong: a strided, non-flat or
  misaligned array, an offset that is not a multiple of 4 (issue 45).
- ``warp_sum``: 32 lanes add their values in five register shuffles (``shfl_down_sync``),
  no shared memory and no barrier; ``block_sum`` adds the warps' sums through 32 shared
  slots and one barrier (a shared-memory tree takes log2(threads) barriers). ``warp_allsum``
  and ``block_allsum2`` leave the sum in every thread (XOR shuffles: a butterfly).

Run: tests/kernels/test_patterns.py tests each under the simulator (which gets a warp
shuffle from kernels/runtime/simulator_fixes.py); the kernels that use them test the rest.
"""
from __future__ import annotations

import numba
import numpy as np

from backprop_traps.kernels.runtime.device import BACKEND, cuda, simulated

# Under the simulator the same casts as numpy's scalars: numba's type objects cast through
# Integer.__call__ (an import and an ABC check a call, about 1.5 us), which the simulated tile
# kernels make millions of times; the values are the same (numba's cast_python_value is np.<name>).
_types = np if simulated() else numba
u64 = _types.uint64  # u64(i): an unsigned 64-bit index, no negative-index wraparound
i64 = _types.int64   # i64(u): back to signed, where a position may fall below 0 (padding)
u32 = _types.uint32  # u32(i): a small offset whose division is a 32-bit one (a tile's own)
VECTOR = 4          # elements per load4 / store4
FULL_MASK = 0xFFFFFFFF
WARP = 32


def bounded_jit(threads: int, blocks_per_sm: int):
    """cuda.jit with ptxas's launch bounds: blocks of at most ``threads`` threads, ``blocks_per_sm``
    of them resident, so at most 65,536 / (threads * blocks_per_sm) registers a thread (the
    static table's bound is 128). The simulator's jit takes no such option."""
    return cuda.jit if simulated() else cuda.jit(launch_bounds=(threads, blocks_per_sm))


@cuda.jit(device=True)
def flat4(n, c, h, w, C, H, W):
    """The flat offset of element (n, c, h, w) of a contiguous (N, C, H, W) array, unsigned:
    every argument a u64 (N itself is not needed)."""
    return ((n * C + c) * H + h) * W + w


@cuda.jit(device=True)
def warp_sum(value):
    """The sum of ``value`` over the 32 lanes of a warp, in lane 0 (the others hold partial
    sums). Every lane of the warp must call it."""
    offset = 16
    while offset > 0:
        value += cuda.shfl_down_sync(FULL_MASK, value, offset)
        offset //= 2
    return value


@cuda.jit(device=True)
def warp_allsum(value):
    """The sum of ``value`` over the 32 lanes of a warp, in every lane (a butterfly of XOR
    shuffles). Every lane of the warp must call it."""
    mask = 16
    while mask > 0:
        value += cuda.shfl_xor_sync(FULL_MASK, value, mask)
        mask //= 2
    return value


@cuda.jit(device=True)
def block_allsum2(shared, a, b, zero, tid, threads):
    """(sum of a, sum of b) over a block's ``threads`` threads (a multiple of 32), in EVERY
    thread: warp sums by shuffles, the warps' sums through shared (2, 32) slots, then each warp
    adds the slots itself. Two barriers; every thread of the block must call it."""
    lane, warp = tid % WARP, tid // WARP
    a, b = warp_allsum(a), warp_allsum(b)
    if lane == 0:
        shared[0, warp], shared[1, warp] = a, b
    cuda.syncthreads()
    here = lane < threads // WARP
    a = warp_allsum(shared[0, lane] if here else zero)
    b = warp_allsum(shared[1, lane] if here else zero)
    cuda.syncthreads()  # every slot is read before a next call writes it
    return a, b


@cuda.jit(device=True)
def warp_max(value):
    """The largest ``value`` over the 32 lanes of a warp, in lane 0."""
    offset = 16
    while offset > 0:
        value = max(value, cuda.shfl_down_sync(FULL_MASK, value, offset))
        offset //= 2
    return value


@cuda.jit(device=True)
def block_sum(shared, value, zero, tid, threads):
    """The sum of ``value`` over a block's ``threads`` threads (a multiple of 32, at most
    1,024), in thread 0. ``shared``: 32 slots of the value's type; ``zero`` a zero of it.
    Every thread of the block must call it."""
    total = warp_sum(value)
    if tid % WARP == 0:
        shared[tid // WARP] = total
    cuda.syncthreads()
    if tid < WARP:
        total = warp_sum(shared[tid] if tid < threads // WARP else zero)
    cuda.syncthreads()  # every slot is read before a next call writes it
    return total


def vector_bytes(itemsize: int) -> int:
    """The bytes one load4/store4 vector instruction moves, and so the alignment it needs and
    claims: 16 (four float32, or each of two float64 pairs), 8 for 16-bit types, 4 for bytes."""
    return min(16, VECTOR * itemsize)


def _contiguous(shape, strides, itemsize) -> bool:
    """Row-major with no gaps (strides None says so in both array interfaces)."""
    if strides is None:
        return True
    expected = itemsize
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size > 1 and stride != expected:
            return False
        expected *= size
    return True


def aligned(*arrays) -> bool:
    """True when every device array is contiguous and starts on its vector's boundary
    (``vector_bytes``): load4 and store4 may read it, flat, from its start."""
    for array in arrays:
        interface = (getattr(array, "__cuda_array_interface__", None)     # a GPU's device array
                     or getattr(array, "__array_interface__", None))      # the simulator's: numpy's
        if interface is None:                                            # a dry run's stand-in
            continue
        itemsize = int(interface["typestr"][2:])
        if (interface["data"][0] % vector_bytes(itemsize)
                or not _contiguous(interface["shape"], interface.get("strides"), itemsize)):
            return False
    return True


# ---- load4 / store4: the GPU's 128-bit vector instructions, or element loads

def _element_access():
    """load4 and store4 as four element accesses (numba-cuda-mlir, or the simulator's base)."""
    @cuda.jit(device=True)
    def load4(a, i):
        """(a[i], a[i + 1], a[i + 2], a[i + 3]): i a u64, a multiple of 4."""
        return a[i], a[i + u64(1)], a[i + u64(2)], a[i + u64(3)]

    @cuda.jit(device=True)
    def store4(a, i, v0, v1, v2, v3):
        """a[i:i + 4] = v0, v1, v2, v3: i a u64, a multiple of 4."""
        a[i] = v0
        a[i + u64(1)] = v1
        a[i + u64(2)] = v2
        a[i + u64(3)] = v3

    return load4, store4


def _checked_access():
    """The simulator's: element accesses that raise on what a GPU would fault on."""
    load, store = _element_access()

    @cuda.jit(device=True)
    def load4(a, i):
        _check_vector(a, i)
        return load(a, i)

    @cuda.jit(device=True)
    def store4(a, i, v0, v1, v2, v3):
        _check_vector(a, i)
        store(a, i, v0, v1, v2, v3)

    return load4, store4


def _check_vector(a, i):
    """Simulator only: what a GPU would get wrong. It faults on a misaligned vector access, and
    reads a strided or many-axis array flat from its start (the simulator would honour strides)."""
    if not isinstance(i, np.unsignedinteger):
        raise TypeError(f"load4/store4 take a u64 offset, got {type(i).__name__}")
    ary = a._item._ary
    if ary.ndim != 1 or ary.strides[0] != ary.itemsize:
        raise ValueError(f"a vector access to an array of shape {ary.shape} and strides {ary.strides}: a GPU reads "
                         "it flat from its start, ignoring strides; pass a contiguous flat array (aligned() checks)")
    start, need = ary.__array_interface__["data"][0], vector_bytes(ary.itemsize)
    if i % VECTOR or start % need:
        raise ValueError(f"a {need * 8}-bit access at element {i} of an array starting {start % need} bytes "
                         f"past a {need}-byte boundary: a GPU faults on it")


def _gpu_access():
    from llvmlite import ir
    from numba.core import types
    from numba.cuda.extending import intrinsic

    def pointers(context, builder, array_type, array, index):
        """The element pointer a[index] as 128-bit vectors: [(pointer, lanes)], 1 or 2 of them."""
        data = context.make_array(array_type)(context, builder, value=array).data
        element = context.get_value_type(array_type.dtype)
        lanes = min(VECTOR, 128 // array_type.dtype.bitwidth)  # float16: one 64-bit vector
        vector = ir.VectorType(element, lanes).as_pointer()
        return [(builder.bitcast(builder.gep(data, [builder.add(index, ir.Constant(index.type, part))]), vector),
                 lanes) for part in range(0, VECTOR, lanes)]

    def alignment(array_type):
        """What an access may claim: its own size, 16 bytes at most (8 for 16-bit types)."""
        return vector_bytes(array_type.dtype.bitwidth // 8)

    @intrinsic
    def load4(typingctx, array, index):
        sig = types.UniTuple(array.dtype, VECTOR)(array, index)

        def codegen(context, builder, sig, args):
            values = []
            for pointer, lanes in pointers(context, builder, sig.args[0], args[0], args[1]):
                vector = builder.load(pointer, align=alignment(sig.args[0]))
                values += [builder.extract_element(vector, ir.Constant(ir.IntType(32), k)) for k in range(lanes)]
            return context.make_tuple(builder, sig.return_type, values)
        return sig, codegen

    @intrinsic
    def store4(typingctx, array, index, v0, v1, v2, v3):
        sig = types.void(array, index, v0, v1, v2, v3)

        def codegen(context, builder, sig, args):
            dtype = sig.args[0].dtype
            values = [context.cast(builder, v, t, dtype) for v, t in zip(args[2:], sig.args[2:])]
            for part, (pointer, lanes) in enumerate(pointers(context, builder, sig.args[0], args[0], args[1])):
                vector = ir.Constant(pointer.type.pointee, ir.Undefined)
                for k in range(lanes):
                    vector = builder.insert_element(vector, values[part * lanes + k], ir.Constant(ir.IntType(32), k))
                builder.store(vector, pointer, align=alignment(sig.args[0]))
            return context.get_dummy_value()
        return sig, codegen

    return load4, store4


if BACKEND == "numba-cuda":
    load4, store4 = _gpu_access()
else:  # the simulator (checked), or numba-cuda-mlir (numba-cuda's intrinsics are not its own)
    load4, store4 = _checked_access() if simulated() else _element_access()
