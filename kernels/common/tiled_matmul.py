"""A tiled matrix product, C = A B, and the pieces the matrix-like kernels build theirs from
(issue 34: the one-thread-per-output products ran at 1% of bandwidth, 0.02-0.10x cuBLAS).

A block of 16 x 16 threads computes a 64 x 64 tile of C. It walks the shared axis 16 at a
time: the block copies a 64 x 16 tile of A and a 16 x 64 tile of B into shared memory
(``load_rows`` / ``load_cols``: consecutive threads on consecutive addresses, every global
element read once per block), then each thread multiplies them into a 4 x 4 tile of C held
in registers (``multiply_tiles``): per step of the shared axis, 4 values of A and 4 of B
from shared memory feed 16 multiply-adds. Thread (tx, ty) owns rows m0 + ty + 16i and
columns n0 + tx + 16j: a warp's threads read 16 consecutive B columns (no bank conflict)
and two A rows (a broadcast), and write 16 consecutive elements of each row of C.

Shared tiles are (BK, 64 + 1): one column of padding (TILE_A, TILE_B; every kernel built from
these pieces allocates its tiles with them). ``load_rows`` stores a warp's 16 consecutive k of
one row m down a column, tile[k, m]: with rows of 64 elements those 16 stores all fall in one
32-bit bank (64 is a multiple of 32), a 16-way bank conflict on every store (issue 45); with
rows of 65 they fall in 16 banks (float64: 16 bank pairs a half-warp). Only the layout changes:
no index reaches the padding, and every sum is the same sum in the same order.

A product with few output tiles and a long shared axis (a JVP step at B = 64: 128 tiles
along an 8,192-long axis) would leave most of a GPU idle, so ``matmul`` splits the shared
axis over grid z as well (``splits``): block z sums its stretch into a partial tile of a
scratch array, and ``sum_splits_kernel`` adds the S partials (split-K, as cuBLAS does).

Transposes cost nothing extra: a tile of A^T or B^T is the same copy with the other loader
(``load_rows`` reads along a row of the source and stores it as a column of the tile). So
the same pieces give A V (a JVP step), U A (a VJP step, A^T never formed), dz W^T and h^T dz
(kernels/vram_trap_v2.py). ``product_tile`` is the walk along the shared axis for any of the
four layouts (``a_transposed``: A given as the (K, M) array it is the transpose of;
``b_transposed``: B given as (N, K)); ``matmul`` takes the same two flags, and a kernel that
does more than multiply (a ReLU, a residual add, a tanh: kernels/residual_backward_v2.py,
kernels/memory_budget_v2.py) calls ``product_tile`` and then writes its own epilogue. Every
index is an unsigned offset into a flat array (sizes as u64: kernels/common/patterns.py), so no load
pays Numba's stride arithmetic or negative-index check.

One skeleton, its copies identical but for their epilogue. Every kernel built on
``product_tile`` (``matmul_kernel`` here, kernels/residual_backward_v2.py's four,
kernels/training_symptoms_v2.py's gated output, kernels/vram_trap_v2.py's two forwards) is
``SKELETON`` below, written out: numba-cuda cannot take the epilogue as an argument (a CUDA
kernel's arguments are arrays and scalars; a device function passed in is not a first-class
value it can call), and a factory that compiles one kernel per epilogue would give every
kernel one Python name, the name the launch checks, the dry run and the static table report
it by. So the copies are kept identical but for their epilogue (the statement under the bounds
check), their own setup (after the block's ids) and their own work after the epilogue, and
tests/kernels/test_tiled_skeleton.py holds every kernel that calls ``product_tile`` to it.

What the static table predicts (benchmarks/results/kernels_static.md): global loads only in
the tile copies, none in the multiply loop; no local memory (the 4 x 4 tile stays in
registers); at most 128 registers a thread (launch bounds).

Shapes: C (M, N) = op(A) (M, K) op(B) (K, N), all row-major and flat: op(A) is A (M, K), or
A^T of an A stored (K, M); op(B) is B (K, N), or B^T of a B stored (N, K).
"""
from __future__ import annotations

import math

from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.runtime.launch_limits import MAX_GRID
from backprop_traps.kernels.common.patterns import bounded_jit, u64

BM = BN = 64        # a block's tile of C
BK = 16             # the shared axis, a step at a time
T, R = 16, 4        # block (T, T); each thread R x R outputs
THREADS = (T, T)
PAD = 1             # a column of padding a tile row: stores down a column hit 16 banks, not 1
TILE_A = (BK, BM + PAD)  # a kernel's shared tiles: cuda.shared.array(TILE_A, dtype), (TILE_B, dtype)
TILE_B = (BK, BN + PAD)
TARGET_BLOCKS = 1024  # split the shared axis until about this many blocks run (8 per SM)
MAX_SPLITS = 64
SUM_THREADS = 256

# The kernel body every product_tile kernel repeats (see above): DTYPE is the array whose dtype
# the tiles take, ROWS and COLS bound the output, OPERANDS are product_tile's arguments after
# the tiles, SETUP and AFTER optional statements of the kernel's own, EPILOGUE its writes.
SKELETON = """
a_tile = cuda.shared.array(TILE_A, DTYPE.dtype)
b_tile = cuda.shared.array(TILE_B, DTYPE.dtype)
acc = cuda.local.array((R, R), DTYPE.dtype)
tx, ty = u64(cuda.threadIdx.x), u64(cuda.threadIdx.y)
tid, zero = cuda.threadIdx.y * T + cuda.threadIdx.x, DTYPE.dtype.type(0)
n0, m0 = u64(cuda.blockIdx.x * BN), u64(cuda.blockIdx.y * BM)
SETUP
while m0 < ROWS:
    product_tile(acc, a_tile, b_tile, *OPERANDS)
    for i in range(R):
        m = m0 + ty + u64(16 * i)
        for j in range(R):
            n = n0 + tx + u64(16 * j)
            if m < ROWS and n < COLS:
                EPILOGUE
    AFTER
    m0 += u64(cuda.gridDim.y * BM)
"""


@cuda.jit(device=True)
def load_rows(tile, src, rows, cols, r0, c0, tid, zero, ld):
    """tile[k, m] = src[r0 + m, c0 + k] (zero past rows or cols): a 64 x 16 block of a flat
    row-major matrix with rows of ld elements, stored transposed in a (BK, 64 + PAD) shared tile.
    Thread tid of 256 copies 4; consecutive threads read consecutive k (16 contiguous a row)."""
    for e in range(tid, BM * BK, T * T):
        m, k = u64(e // BK), u64(e % BK)                 # constant divisor: a shift and a mask
        r, c = r0 + m, c0 + k
        tile[k, m] = src[r * ld + c] if r < rows and c < cols else zero


@cuda.jit(device=True)
def load_cols(tile, src, rows, cols, r0, c0, tid, zero):
    """tile[k, n] = src[r0 + k, c0 + n] (zero past rows or cols; rows of cols elements): a
    16 x 64 block, consecutive threads on consecutive n (64 contiguous elements a row)."""
    for e in range(tid, BK * BN, T * T):
        k, n = u64(e // BN), u64(e % BN)
        r, c = r0 + k, c0 + n
        tile[k, n] = src[r * cols + c] if r < rows and c < cols else zero


@cuda.jit(device=True)
def multiply_tiles(a_tile, b_tile, acc, tx, ty):
    """acc[i, j] += sum_k a_tile[k, ty + 16i] * b_tile[k, tx + 16j]: shared memory only."""
    for k in range(u64(BK)):
        a0, a1, a2, a3 = a_tile[k, ty], a_tile[k, ty + u64(16)], a_tile[k, ty + u64(32)], a_tile[k, ty + u64(48)]
        for j in range(R):
            b = b_tile[k, tx + u64(16 * j)]
            acc[0, j] += a0 * b
            acc[1, j] += a1 * b
            acc[2, j] += a2 * b
            acc[3, j] += a3 * b


@cuda.jit(device=True)
def product_tile(acc, a_tile, b_tile, a, b, a_transposed, b_transposed, m_rows, n_cols, k_first, k_stop, k_len,
                 m0, n0, tid, tx, ty, zero):
    """acc[i, j] = sum over k_first <= k < k_stop of op(A)[m0 + ty + 16i, k] op(B)[k, n0 + tx + 16j]:
    this thread's 4 x 4 of the block's 64 x 64 tile at (m0, n0), in registers. op(A) is a (M, K),
    or with ``a_transposed`` a^T of a stored (K, M); op(B) is b (K, N), or with ``b_transposed``
    b^T of b stored (N, K); k_len is K. Every thread of the block must call it (it holds barriers)."""
    for i in range(R):
        for j in range(R):
            acc[i, j] = zero
    for k0 in range(k_first, k_stop, u64(BK)):
        if a_transposed:
            load_cols(a_tile, a, k_stop, m_rows, k0, m0, tid, zero)          # rows k0.. of a (K, M)
        else:
            load_rows(a_tile, a, m_rows, k_stop, m0, k0, tid, zero, k_len)   # rows m0.. of a (M, K)
        if b_transposed:
            load_rows(b_tile, b, n_cols, k_stop, n0, k0, tid, zero, k_len)   # rows n0.. of b (N, K)
        else:
            load_cols(b_tile, b, k_stop, n_cols, k0, n0, tid, zero)          # rows k0.. of b (K, N)
        cuda.syncthreads()
        multiply_tiles(a_tile, b_tile, acc, tx, ty)
        cuda.syncthreads()


@bounded_jit(T * T, 2)  # at most 128 registers a thread
def matmul_kernel(a, b, out, a_transposed, b_transposed, m_rows, n_cols, k_len, k_chunk):
    # a: M*K (or K*M, a_transposed), b: K*N (or N*K, b_transposed), flat, row-major; out: S*M*N,
    # split z's partial product over its stretch k_chunk of the shared axis (S = 1: out is C
    # itself); sizes: u64. Grid (N / 64 column tiles, M / 64 row tiles strided past 65,535, S splits).
    a_tile = cuda.shared.array(TILE_A, a.dtype)           # op(A)[m0 + m, k0 + k] at [k, m]
    b_tile = cuda.shared.array(TILE_B, a.dtype)           # op(B)[k0 + k, n0 + n] at [k, n]
    acc = cuda.local.array((R, R), a.dtype)               # registers: every loop over it unrolls
    tx, ty = u64(cuda.threadIdx.x), u64(cuda.threadIdx.y)
    tid, zero = cuda.threadIdx.y * T + cuda.threadIdx.x, a.dtype.type(0)
    n0, m0 = u64(cuda.blockIdx.x * BN), u64(cuda.blockIdx.y * BM)
    z = u64(cuda.blockIdx.z)                              # this block's split of the shared axis
    k_first = z * k_chunk
    k_stop = min(k_first + k_chunk, k_len)
    base = z * m_rows * n_cols                            # this split's M x N
    while m0 < m_rows:                                    # the same for the whole block
        product_tile(acc, a_tile, b_tile, a, b, a_transposed, b_transposed, m_rows, n_cols, k_first, k_stop,
                     k_len, m0, n0, tid, tx, ty, zero)
        for i in range(R):
            m = m0 + ty + u64(16 * i)
            for j in range(R):
                n = n0 + tx + u64(16 * j)
                if m < m_rows and n < n_cols:
                    out[base + m * n_cols + n] = acc[i, j]
        m0 += u64(cuda.gridDim.y * BM)


@cuda.jit
def sum_splits_kernel(partials, c, size, splits):
    # partials: S*size; c: size (written: the sum of the S partials); size, splits: u64
    e, stride = u64(cuda.grid(1)), u64(cuda.gridsize(1))
    while e < size:
        total = partials[e]
        for z in range(u64(1), splits):
            total += partials[z * size + e]
        c[e] = total
        e += stride


# launchers: device arrays in, launched ----------------------------------------------------------

def grid(m_rows: int, n_cols: int) -> tuple[int, int]:
    """(column tiles, row tiles) for (M, N): row tiles capped at 65,535 (the kernels stride on)."""
    return max(1, math.ceil(n_cols / BN)), max(1, min(math.ceil(m_rows / BM), MAX_GRID[1]))


def splits(m_rows: int, n_cols: int, k_len: int) -> int:
    """S, the stretches of the shared axis: 1 when the output tiles fill a GPU, else enough
    for TARGET_BLOCKS blocks, each stretch at least 64 long (4 steps), at most MAX_SPLITS."""
    tiles = math.prod(grid(m_rows, n_cols))
    if tiles >= TARGET_BLOCKS:
        return 1
    return max(1, min(math.ceil(TARGET_BLOCKS / tiles), k_len // (4 * BK), MAX_SPLITS))


def scratch(m_rows: int, n_cols: int, k_len: int, dtype):
    """The partials ``matmul`` needs for (M, N, K): (S * M * N,), or None when S = 1."""
    s = splits(m_rows, n_cols, k_len)
    return cuda.device_array(s * m_rows * n_cols, dtype) if s > 1 else None


def matmul(d_a, d_b, d_c, d_scratch=None, a_transposed=False, b_transposed=False):
    """d_c (M, N) = op(d_a) (M, K) @ op(d_b) (K, N), device arrays: d_a is (M, K), or (K, M) with
    ``a_transposed`` (A^T never formed); d_b is (K, N), or (N, K) with ``b_transposed``. One
    launch, or, when ``splits`` > 1, two through d_scratch (``scratch``; allocated here when not given)."""
    m_rows, k_len = d_a.shape[::-1] if a_transposed else d_a.shape
    n_cols = d_b.shape[0] if b_transposed else d_b.shape[1]
    s = splits(m_rows, n_cols, k_len)
    out = d_c.reshape(d_c.size)
    if s > 1:
        out = d_scratch if d_scratch is not None else scratch(m_rows, n_cols, k_len, d_c.dtype)
    chunk = BK * math.ceil(k_len / (s * BK))                # a whole number of 16-steps a split
    matmul_kernel[grid(m_rows, n_cols) + (s,), THREADS](
        d_a.reshape(d_a.size), d_b.reshape(d_b.size), out, bool(a_transposed), bool(b_transposed),
        u64(m_rows), u64(n_cols), u64(k_len), u64(chunk))
    if s > 1:
        size = m_rows * n_cols
        blocks = max(1, min(math.ceil(size / SUM_THREADS), 4 * TARGET_BLOCKS))
        sum_splits_kernel[blocks, SUM_THREADS](out, d_c.reshape(size), u64(size), u64(s))
