"""Hidden checks for training_memory: the memory budget of a training run, to the byte.

Every answer is an exact integer (a float only for ``convert_bytes``), so the checks compare
with ``==`` on configurations drawn here, never the notebook's: several per check, of very
different sizes, so that a formula fitted to one example fails. The reference is the solution
notebook (``ctx.ref``); the traps are recognised by how a wrong answer behaves (a peak that
grows by ``t`` tensors per added layer, an answer that does not move when ``saved_per_layer``
does, a GB that is the right GiB), with the wrong values derived from the reference's own.
Activation feedback is given in tensors of ``T = B * S * D * bytes`` bytes, the unit a learner
reasons in.
"""
from __future__ import annotations

import math

from backprop_traps.grader.engine.question import Fail, Question, Trap

DTYPES = ("fp64", "fp32", "fp16", "bf16", "fp8")
OPTIMIZERS = ("sgd", "momentum", "adam")
KEYS = ("params", "grads", "master", "optimizer", "total")
SWAPPED = {"KB": "KiB", "MB": "MiB", "GB": "GiB", "TB": "TiB",
           "KiB": "KB", "MiB": "MB", "GiB": "GB", "TiB": "TB"}
STATE = "model_state_bytes"
ACT = "activation_bytes"
CKPT = "checkpointed_activation_bytes"

QUESTION = Question("training_memory", "The memory budget of a training run, to the byte", traps=[
    Trap("master-copy-forgotten", "Under mixed precision you left out the fp32 master copy of "
         "the weights (4 bytes per parameter). The optimizer cannot update bf16 or fp16 weights "
         "directly: small updates round away in 8 significant bits, so it keeps an fp32 copy, "
         "updates that, and rounds it into the half-precision weights. Mixed-precision Adam is "
         "2 + 2 + 4 + 8 = 16 bytes per parameter, not 12."),
    Trap("adam-moments-half", "You counted the optimizer state in the weights' half precision "
         "(2 bytes per moment). The moments are running averages of tiny numbers (g squared is "
         "around 1e-8) updated by a small fraction each step: they are kept in fp32, 4 bytes "
         "each, like the master copy they update, whatever the weights' dtype."),
    Trap("per-layer-not-per-tensor", "You counted one (B, S, D) tensor per layer. A layer saves "
         "several tensors for its backward (a linear layer its input, GELU its input, ...): "
         "multiply by saved_per_layer, the number of tensors each layer keeps."),
    Trap("gb-gib-mixed", "You mixed up the decimal and binary prefixes: GB, MB, KB, TB are powers "
         "of 1000 (1 GB = 10^9 bytes), GiB, MiB, KiB, TiB powers of 1024 (1 GiB = 2^30 bytes). "
         "They differ by 7.4 % at G and 10 % at T."),
    Trap("checkpoint-keeps-all-recomputes", "Your checkpointed peak grows by saved_per_layer "
         "tensors with every layer added, as if every segment's recomputed tensors stayed alive "
         "until the end of the backward. Each segment is recomputed, backpropagated and freed "
         "before the next one is recomputed: at any moment only the kept checkpoints and one "
         "segment's saved tensors are alive."),
], difficulty="medium", kinks={})


# -- reading answers ---------------------------------------------------------------------
def as_int(value, what: str) -> int:
    """An exact byte count: an int (a float, even a whole one, is refused with why)."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float):
            raise Fail(f"{what} returned the float {value!r}; byte counts are ints. Keep the "
                       "arithmetic in integers (// and a ceiling of integers, no /): a float "
                       "rounds above 2^53 and hides an off-by-one.")
        raise Fail(f"{what} must return an int number of bytes, but returned "
                   f"{type(value).__name__}")
    return value


def shown(fn: str, *args) -> str:
    return f"{fn}({', '.join(repr(a) for a in args)})"


def per_param(value: int, n: int) -> str:
    return f"{value:,} B" + (f" ({value / n:g} bytes per parameter)" if n else "")


# -- dtype_bytes, convert_bytes --------------------------------------------------------------
@QUESTION.check("dtype_bytes: bytes per element of every dtype", points=1, hints=(
    "Which two dtypes of the five share a size?",
    "bf16 and fp16 are both 16-bit formats; fp8 is one byte.",
))
def dtype_sizes(ctx):
    for dtype in ctx.rng.permutation(DTYPES):
        dtype = str(dtype)
        call = shown("dtype_bytes", dtype)
        got, want = as_int(ctx.call("dtype_bytes", dtype), call), ctx.ref.dtype_bytes(dtype)
        if got != want:
            raise Fail(f"{call} returned {got}, expected {want}: a {dtype} element takes "
                       f"{8 * want} bits.")


@QUESTION.check("convert_bytes: every unit, decimal and binary", points=1, hints=(
    "Which of the two families has the 'i' in its name, and what does it stand for?",
    "Decimal (SI) prefixes are powers of 1000; binary (IEC) prefixes, KiB to TiB, powers of 1024.",
))
def unit_conversion(ctx):
    sizes = [0, 2**30, 10**9, int(ctx.rng.integers(1, 10**6)), int(ctx.rng.integers(10**9, 10**13)),
             int(ctx.rng.integers(10**13, 10**16))]
    units = ["B"] + list(SWAPPED)
    for n in sizes:
        for unit in ctx.rng.permutation(units):
            unit = str(unit)
            call = shown("convert_bytes", n, unit)
            got = ctx.call("convert_bytes", n, unit)
            if isinstance(got, bool) or not isinstance(got, (int, float)):
                raise Fail(f"{call} must return a number (a float), but returned {type(got).__name__}")
            want = ctx.ref.convert_bytes(n, unit)
            if math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-300):
                continue
            if unit in SWAPPED and math.isclose(got, ctx.ref.convert_bytes(n, SWAPPED[unit]), rel_tol=1e-12):
                raise Fail(f"{call} returned {got!r}, which is {n:,} bytes in {SWAPPED[unit]}; in "
                           f"{unit} it is {want!r}. {QUESTION.trap('gb-gib-mixed').explanation}",
                           "gb-gib-mixed")
            raise Fail(f"{call} returned {got!r}, expected {want!r}.")


# -- model_state_bytes ---------------------------------------------------------------------
def param_counts(rng) -> list[int]:
    """Parameter counts from tiny to a trillion, none of them a round number."""
    return [int(rng.integers(1, 1000)), int(rng.integers(10**6, 10**8)),
            int(rng.integers(10**9, 10**10)), int(rng.integers(10**11, 2 * 10**12))]


def call_state(ctx, n, optimizer, precision) -> dict:
    call = shown(STATE, n, optimizer, precision)
    got = ctx.call(STATE, n, optimizer, precision)
    if not isinstance(got, dict):
        raise Fail(f"{call} must return a dict with the keys {', '.join(KEYS)}, but returned "
                   f"{type(got).__name__}")
    if set(got) != set(KEYS):
        missing, extra = sorted(set(KEYS) - set(got)), sorted(set(got) - set(KEYS))
        raise Fail(f"{call} must return exactly the keys {', '.join(KEYS)}"
                   + (f"; missing {', '.join(missing)}" if missing else "")
                   + (f"; unexpected {', '.join(extra)}" if extra else ""))
    return {k: as_int(got[k], f"{call}[{k!r}]") for k in KEYS}


def compare_state(ctx, n, optimizer, precision, keys, why) -> None:
    """The learner's dict against the reference on ``keys``; ``why(got, want)`` may name a trap."""
    got, want = call_state(ctx, n, optimizer, precision), ctx.ref.model_state_bytes(n, optimizer, precision)
    wrong = [k for k in keys if got[k] != want[k]]
    if not wrong:
        return
    lines = "\n".join(f"  [{k!r}]: expected {per_param(want[k], n)}, got {per_param(got[k], n)}"
                      for k in wrong)
    trap, advice = why(got, want)
    if trap:
        advice = QUESTION.trap(trap).explanation
    raise Fail(f"{shown(STATE, n, optimizer, precision)} is wrong. {advice}\n{lines}", trap)


def fp32_advice(got, want):
    if got["master"]:
        return None, ("In fp32 training the weights already are fp32: there is no second copy "
                      "(master is 0).")
    if got["optimizer"] != want["optimizer"]:
        return None, ("Count the optimizer's own fp32 buffers per parameter: none for plain SGD, "
                      "one velocity for momentum, two moments for Adam.")
    if got["total"] != sum(got[k] for k in KEYS[:4]):
        return None, "total is the sum of the four components."
    return None, "fp32 means 4 bytes per weight and 4 per gradient."


@QUESTION.check("model_state_bytes in fp32: weights, gradients, SGD / momentum / Adam state",
                points=2, hints=(
    "List what exists for every parameter between two steps, and its dtype.",
    "Plain SGD keeps nothing besides weights and gradients; momentum keeps one buffer; Adam two.",
    "In fp32 training the weights are already full precision: no master copy.",
))
def state_fp32(ctx):
    for n in param_counts(ctx.rng) + [1]:
        for optimizer in OPTIMIZERS:
            compare_state(ctx, n, optimizer, "fp32", KEYS, fp32_advice)


def mixed_advice(got, want):
    if want["master"] and got["master"] == 0:
        return "master-copy-forgotten", ""
    if got["params"] != want["params"] or got["grads"] != want["grads"]:
        return None, ("Under mixed precision the weights the forward uses, and their gradients, "
                      "are 16-bit (bf16 or fp16): 2 bytes each.")
    return None, "The master copy is fp32: 4 bytes per parameter."


@QUESTION.check("model_state_bytes in mixed precision: the weights and their copies",
                points=2, hints=(
    "Under mixed precision, which copy of the weights does the forward use, and which one does "
    "the optimizer update?",
    "Add 1e-4 to 1.0 in bf16 (8 significant bits): what do you get?",
))
def state_mixed_master(ctx):
    for n in [0] + param_counts(ctx.rng):
        for optimizer in OPTIMIZERS:
            compare_state(ctx, n, optimizer, "mixed", ("params", "grads", "master"), mixed_advice)


def optimizer_advice(got, want):
    if want["optimizer"] and 2 * got["optimizer"] == want["optimizer"]:
        return "adam-moments-half", ""
    if want["master"] and got["total"] == want["total"] - want["master"]:
        return "master-copy-forgotten", ""
    if got["total"] != sum(got[k] for k in KEYS[:4]):
        return None, "total is the sum of the four components."
    return None, ("The optimizer state does not depend on the weights' dtype: one fp32 buffer "
                  "for momentum, two for Adam.")


@QUESTION.check("model_state_bytes in mixed precision: the optimizer's state", points=2, hints=(
    "Mixed-precision Adam costs exactly as many bytes per parameter as fp32 Adam: why?",
    "The optimizer's buffers follow the master weights they update, not the 16-bit copy.",
    "Add up weights, gradients, master copy and both moments: the total is a round number.",
))
def state_mixed_optimizer(ctx):
    for n in param_counts(ctx.rng):
        for optimizer in ("adam", "momentum", "sgd"):
            compare_state(ctx, n, optimizer, "mixed", ("optimizer", "total"), optimizer_advice)


# -- activation_bytes -------------------------------------------------------------------------
def tensor_bytes(ctx, batch, seq_len, width, dtype) -> int:
    """T, from the reference: one saved tensor of one layer, without checkpointing."""
    return ctx.ref.activation_bytes(batch, seq_len, width, 1, 1, dtype)


def in_tensors(value: int, tensor: int) -> str:
    if tensor and value % tensor == 0:
        return f"{value // tensor:,} tensors"
    return f"{value / tensor:.4g} tensors, not a whole number of them" if tensor else "?"


def shapes(rng, count):
    """(batch, seq_len, width, dtype) draws: batch 1 and odd sizes included."""
    draws = [(1, int(rng.integers(1000, 9000)), int(rng.integers(1000, 9000)), "bf16")]
    while len(draws) < count:
        draws.append((int(rng.integers(1, 65)), int(rng.integers(1, 8193)),
                      int(rng.integers(1, 16385)), str(rng.choice(DTYPES))))
    return draws


def ignores_saved(ctx, fn, args, position, got) -> bool:
    """Is the learner's ``fn`` right with saved_per_layer = 1 and unmoved when it is larger
    (``args[position] > 1``)? Then it counts one tensor per layer."""
    if args[position] == 1:
        return False
    one = list(args)
    one[position] = 1
    try:
        return ctx.call(fn, *one) == got == getattr(ctx.ref, fn)(*one)
    except Fail:
        return False


@QUESTION.check("activation_bytes: random shapes, dtypes and tensors per layer", points=2, hints=(
    "How big is one (B, S, D) tensor in bytes, and how many of them are alive when the "
    "backward starts?",
    "Count tensors, not layers: each layer saves saved_per_layer of them.",
    "A linear layer saves its input; GELU saves its input: that layer pair keeps two.",
))
def activations_plain(ctx):
    for batch, seq_len, width, dtype in shapes(ctx.rng, 5):
        n_layers, saved = int(ctx.rng.integers(1, 129)), int(ctx.rng.integers(2, 41))
        for L, t in ((n_layers, saved), (1, saved), (n_layers, 1)):
            args = (batch, seq_len, width, L, t, dtype)
            call = shown(ACT, *args)
            got, want = as_int(ctx.call(ACT, *args), call), ctx.ref.activation_bytes(*args)
            if got == want:
                continue
            T = tensor_bytes(ctx, batch, seq_len, width, dtype)
            detail = (f"{call} returned {got:,} B ({in_tensors(got, T)} of T = {T:,} B), expected "
                      f"{want:,} B ({want // T:,} tensors: {L} layers x {t} saved).")
            if ignores_saved(ctx, ACT, args, 4, got):
                raise Fail(f"{detail} {QUESTION.trap('per-layer-not-per-tensor').explanation}",
                           "per-layer-not-per-tensor")
            raise Fail(detail + " T = batch x seq_len x width x the dtype's bytes per element.")


# -- checkpointed_activation_bytes -----------------------------------------------------------------
def peak_in_tensors(ctx, L, t, k) -> int:
    """The reference's peak, in tensors (T = 1 byte: a 1 x 1 x 1 fp8 tensor)."""
    return ctx.ref.checkpointed_activation_bytes(1, 1, 1, L, t, "fp8", k)


def checkpoint_advice(L, t, k, got_tensors) -> str:
    """Plain words for the usual near misses, counted in tensors (no trap: the arithmetic of
    the schedule, not a wrong idea of it)."""
    m = -(-L // k)
    if got_tensors == m + min(k, L) * t:
        return (" You count every checkpoint and a whole segment's saved tensors on top. But the "
                "first layer of a segment saves its own input, which is that segment's checkpoint "
                "(the same memory, counted once), and the checkpoints of segments already "
                "backpropagated are freed.")
    if L % k and got_tensors == m - 1 + k * t:
        return (" When the last segment is shorter, the peak comes from the last full segment, "
                "and by then the last segment's checkpoint has been freed.")
    if L % k and got_tensors == m - 1 + (L - (m - 1) * k) * t:
        return (" The first segment recomputed is the shortest here; a full segment recomputed "
                "later holds more tensors. Take the largest over all segments.")
    return (" Walk the backward segment by segment: which checkpoints are still alive while a "
            "segment's recomputed tensors are?")


def keeps_everything(ctx, args, got, T) -> bool:
    """Does the learner's peak behave like no checkpointing at all: no smaller than L t tensors,
    and growing by t tensors for every layer added (plus at most the new checkpoints)?"""
    batch, seq_len, width, L, t, dtype, k = args
    if got < L * t * T:
        return False
    try:
        longer = as_int(ctx.call(CKPT, batch, seq_len, width, 2 * L, t, dtype, k), "the probe")
    except Fail:
        return False
    return L * t * T <= longer - got <= (L * t + -(-L // k) + 1) * T


def expect_checkpointed(ctx, args) -> None:
    batch, seq_len, width, L, t, dtype, k = args
    call = shown(CKPT, *args)
    got, want = as_int(ctx.call(CKPT, *args), call), ctx.ref.checkpointed_activation_bytes(*args)
    if got == want:
        return
    T = tensor_bytes(ctx, batch, seq_len, width, dtype)
    m = -(-L // k)
    detail = (f"{call} returned {got:,} B ({in_tensors(got, T)} of T = {T:,} B), expected "
              f"{want:,} B ({want // T:,} tensors; {L} layers in {m} segment{'s' * (m > 1)} of "
              f"up to {k}, {t} saved per layer).")
    if want < L * t * T and keeps_everything(ctx, args, got, T):
        raise Fail(f"{detail} {QUESTION.trap('checkpoint-keeps-all-recomputes').explanation}",
                   "checkpoint-keeps-all-recomputes")
    if ignores_saved(ctx, CKPT, args, 4, got):
        raise Fail(f"{detail} {QUESTION.trap('per-layer-not-per-tensor').explanation}",
                   "per-layer-not-per-tensor")
    advice = checkpoint_advice(L, t, k, got // T) if got % T == 0 else (
        " The peak is a whole number of (B, S, D) tensors.")
    raise Fail(detail + advice)


@QUESTION.check("checkpointed_activation_bytes: segments that divide the layers",
                points=2, hints=(
    "Which tensors are alive while one segment is recomputed and backpropagated?",
    "A segment's first layer saves its own input: that is the checkpoint, the same memory.",
    "Once a segment's backward is done, its recomputed tensors and its checkpoint are freed.",
))
def checkpoint_full_segments(ctx):
    for batch, seq_len, width, dtype in shapes(ctx.rng, 4):
        k, m, t = int(ctx.rng.integers(2, 13)), int(ctx.rng.integers(2, 9)), int(ctx.rng.integers(1, 13))
        expect_checkpointed(ctx, (batch, seq_len, width, k * m, t, dtype, k))


@QUESTION.check("checkpointed_activation_bytes: a shorter last segment, k = 1, k >= L",
                points=2, hints=(
    "Compute the tensors alive for every segment, not just the first one the backward reaches.",
    "When k does not divide L, compare the short last segment with the last full one: which "
    "checkpoints are still alive for each?",
    "With k >= L there is one segment: what does recomputing all of it cost?",
))
def checkpoint_edges(ctx):
    rng = ctx.rng
    cases = []
    for _ in range(4):                          # the last segment shorter, two segments or more
        k = int(rng.integers(2, 11))
        L = k * int(rng.integers(1, 8)) + int(rng.integers(1, k))
        cases.append((L, int(rng.integers(1, 9)), k))
    L = int(rng.integers(5, 40))
    cases += [(L, int(rng.integers(2, 9)), 1), (L, int(rng.integers(1, 9)), L),
              (L, int(rng.integers(1, 9)), L + int(rng.integers(1, 30))), (1, int(rng.integers(1, 9)), 1),
              (int(rng.integers(3, 40)), 1, 2)]
    for (L, t, k), (batch, seq_len, width, dtype) in zip(cases, shapes(rng, len(cases))):
        expect_checkpointed(ctx, (batch, seq_len, width, L, t, dtype, k))


# -- best_checkpoint_every --------------------------------------------------------------------
def tie_case(ctx):
    """An (L, t) where two values of k give the same smallest peak."""
    for _ in range(200):
        L, t = int(ctx.rng.integers(4, 41)), int(ctx.rng.integers(1, 7))
        peaks = [peak_in_tensors(ctx, L, t, k) for k in range(1, L + 1)]
        if peaks.count(min(peaks)) > 1:
            return L, t
    return 6, 3


@QUESTION.check("best_checkpoint_every: the interval with the smallest peak", points=1, hints=(
    "Try every k from 1 to L: the peak does not depend on batch, width or dtype.",
    "The peak is about L / k + k t: where is that smallest?",
    "On a tie, the smallest k wins.",
))
def best_interval(ctx):
    rng = ctx.rng
    cases = [(int(rng.integers(20, 49)), 1), (int(rng.integers(10, 49)), int(rng.integers(2, 9))),
             (int(rng.integers(2, 30)), int(rng.integers(1, 5))), (1, int(rng.integers(1, 9))),
             tie_case(ctx)]
    for L, t in cases:
        call = shown("best_checkpoint_every", L, t)
        got, want = as_int(ctx.call("best_checkpoint_every", L, t), call), ctx.ref.best_checkpoint_every(L, t)
        if got == want:
            continue
        best = peak_in_tensors(ctx, L, t, want)
        if not 1 <= got <= L:
            raise Fail(f"{call} returned {got}, expected {want}: k lies between 1 and L = {L}.")
        mine = peak_in_tensors(ctx, L, t, got)
        tie = " Both peak at the same size: on a tie the smallest k wins." if mine == best else ""
        raise Fail(f"{call} returned {got}, expected {want}: checkpointing every {want} layers "
                   f"peaks at {best} tensors, every {got} at {mine}.{tie} (If your answer builds "
                   "on your checkpointed_activation_bytes, get that one right first.)")
