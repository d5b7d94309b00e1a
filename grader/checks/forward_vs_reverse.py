"""Hidden checks for forward_vs_reverse: JVPs, VJPs and what a Jacobian costs.

The chain is f(x) = A_k ... A_1 x with ``As[i]`` of shape (m_{i+1}, m_i), written here as
its widths ``dims = [m_0, ..., m_k]``; S = sum m_i m_{i-1} multiply-adds is one forward
pass. Values are checked against central finite differences of the reference forward
(``ctx.ref``, the solution notebook). Costs are multiply-adds counted in the grader, not in
the sandbox: after the learner's code loads, ``matvec``, ``vecmat`` and ``matmul`` are
replaced by helpers that ask the grader to do the product (``backprop_traps.grader.sandbox.counted.Counter``), so the learner's
code can neither write the count nor do a counted product without the grader doing it.
The known-wrong variants below are the traps, computed here on the same inputs.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.gradcheck import EPS, upstream
from backprop_traps.grader.engine.question import Fail, Question, Trap
from backprop_traps.grader.sandbox.counted import Counter

QUESTION = Question("forward_vs_reverse", "Forward or reverse: JVPs, VJPs and what a Jacobian costs", traps=[
    Trap("matrix-matrix-chain", "The values are right, but you multiplied the matrices (the "
         "layers' Jacobians) together before applying them to the vector, so every intermediate "
         "is a matrix and the cost grows from O(m^2 k) to O(m^3 k). Keep a vector in hand and "
         "absorb one matrix at a time: one matvec per layer for a JVP (A_1 first), one vecmat "
         "per layer for a VJP (A_k first)."),
    Trap("wrong-order", "The matrices are applied in the wrong order: a JVP starts at A_1 (the "
         "layer next to the input) and a VJP starts at A_k (the layer next to the output), "
         "taking the transposes on the way back. On square matrices the wrong order gives a "
         "different product silently; on other chains the shapes do not fit."),
    Trap("no-transpose", "Your VJP multiplies by A_i on the way back where it needs A_i^T: "
         "the cotangent of a layer's input is A_i^T times the cotangent of its output. "
         "vecmat(u, A) computes u^T A = A^T u without copying a transposed matrix."),
], difficulty="medium", kinks={})

COUNTER = "take_multiply_adds"
CAP = 2.0  # a JVP or VJP may spend up to twice one pass (e.g. an extra forward), no more
NOT_THROUGH_HELPERS = ("Do every product with matvec, vecmat or matmul (the grader counts only "
                       "those): @, np.dot, np.matmul, np.einsum and np.linalg are not counted.")


# -- input generators ------------------------------------------------------------------
def chain(rng, dims) -> list[np.ndarray]:
    """Random float64 matrices As[i] (dims[i + 1], dims[i]), scaled so values stay O(1)."""
    return [rng.standard_normal((dims[i + 1], dims[i])) / np.sqrt(dims[i]) for i in range(len(dims) - 1)]


def small_chain(rng, dims) -> list[np.ndarray]:
    """Small integers, for examples a learner can work by hand."""
    return [rng.integers(-2, 3, size=(dims[i + 1], dims[i])).astype(np.float64) for i in range(len(dims) - 1)]


def one_pass(dims) -> int:
    """S: the multiply-adds of one matrix-vector product per layer."""
    return sum(dims[i + 1] * dims[i] for i in range(len(dims) - 1))



# -- the known-wrong variants (traps) ---------------------------------------------------
def reversed_product(As) -> np.ndarray:
    """A_1 A_2 ... A_k: the chain multiplied in the wrong order (square chains only)."""
    P = As[0]
    for A in As[1:]:
        P = P @ A
    return P


def numerical_jvp(f, x, v, eps=EPS) -> np.ndarray:
    """Central difference of f at x along v."""
    return (f(x + eps * v) - f(x - eps * v)) / (2 * eps)


def numerical_jacobian(f, x) -> np.ndarray:
    """Column j is the central difference along e_j."""
    return np.stack([numerical_jvp(f, x, e) for e in np.eye(x.size)], axis=1)


def pick(got, candidates: list[tuple[str, np.ndarray]]) -> dict:
    """The traps to offer ``expect_array``: per trap id, a candidate ``got`` matches (or the first)."""
    traps: dict = {}
    for trap, wrong in candidates:
        same = np.shape(got) == np.shape(wrong) and np.allclose(np.asarray(got, dtype=float), wrong)
        if trap not in traps or same:
            traps[trap] = wrong
    return traps


# -- the grader-side products and their count -------------------------------------------
HELPERS = '''
def _counted_helpers(ask):
    import numpy

    def _ask(name, *args):
        # Arrays cross to the grader as numpy; a torch tensor comes back as a tensor.
        value = ask(name, *[numpy.asarray(a.detach().cpu() if hasattr(a, "detach") else a) for a in args])
        if any(type(a).__module__.split(".")[0] == "torch" for a in args):
            import torch
            return torch.from_numpy(value)
        return value

    def matvec(A, v):
        """A @ v, done and counted by the grader: m * n multiply-adds."""
        return _ask("matvec", A, v)

    def vecmat(u, A):
        """u @ A, done and counted by the grader: m * n multiply-adds."""
        return _ask("vecmat", u, A)

    def matmul(A, B):
        """A @ B, done and counted by the grader: m * n * p multiply-adds."""
        return _ask("matmul", A, B)

    def take_multiply_adds():
        """The multiply-adds counted since the last call (yours; the grader keeps its own)."""
        return ask("take_multiply_adds")
    return matvec, vecmat, matmul, take_multiply_adds


matvec, vecmat, matmul, take_multiply_adds = _counted_helpers(_grader_ask)
del _counted_helpers
'''


def services():
    counter = Counter()
    return HELPERS, {"matvec": counter.matvec, "vecmat": counter.vecmat, "matmul": counter.matmul,
                     COUNTER: counter.take_learner_tally, "_counter": lambda: counter}


QUESTION.services = services


# -- calling with the counter, and the small example ------------------------------------
def counted(ctx, fn, *args):
    """The learner's ``fn(*args)`` and the multiply-adds the grader did for it meanwhile,
    on the chain ``args[0]``. The answer must have come out of those products."""
    counter = ctx.sandbox.services.get("_counter")
    if counter is None:  # in process (validate): the namespace's own setup-cell counter
        ctx.service(COUNTER)
        value = ctx.call(fn, *args)
        return value, ctx.service(COUNTER)
    counter = counter()
    counter.begin(args[0], *args[1:])
    try:
        value = ctx.call(fn, *args)
        from_products = counter.came_from_products(value)
    finally:
        counter.end()
    if counter.multiply_adds and not from_products:
        raise Fail(f"The answer {fn} returned is not the result of its counted products: it was "
                   f"computed some other way. {NOT_THROUGH_HELPERS}")
    return value, counter.multiply_adds


def example(ctx, fn, vector):
    """The smallest chain where the learner's ``fn`` is still wrong; ``vector`` names its
    second argument (None for the Jacobians, which take the chain alone)."""
    def build(rng, dims):
        As = small_chain(rng, dims)
        args = {"As": As}
        if vector == "v":
            args["v"] = rng.integers(-2, 3, size=dims[0]).astype(np.float64)
        elif vector == "u":
            args["u"] = rng.integers(-2, 3, size=dims[-1]).astype(np.float64)
        shown = {f"A{i + 1}": A for i, A in enumerate(As)}
        shown.update({k: v for k, v in args.items() if k != "As"})
        return args, shown
    sizes = [(2, 2), (2, 2, 2), (2, 3, 2), (3, 3, 3, 3), (2, 3, 4, 2)]
    return lambda: ctx.smallest_failure(fn, build, sizes, getattr(ctx.ref, fn),
                                        name={"v": "J v", "u": "J^T u"}.get(vector, "J"))


# -- judging a count ---------------------------------------------------------------------
def expect_cost(fn, count: int, expected: int, dims, other_mode: tuple[str, int, str] | None = None):
    """``count`` must lie in [expected / 2, CAP * expected]; else say why, naming the trap.
    ``other_mode``: (its price in words, its exact count, what to do instead)."""
    shape = f"widths {' -> '.join(map(str, dims))}"
    if count < expected / 2:
        did = "no multiply-adds" if count == 0 else f"only {count:,} multiply-adds"
        raise Fail(f"{fn} counted {did} on a chain of {shape}, where one pass through the layers "
                   f"takes {expected:,}: its products bypass the counting helpers. {NOT_THROUGH_HELPERS}")
    if count <= CAP * expected:
        return
    if other_mode is not None and count == other_mode[1]:
        raise Fail(f"{fn} counted {count:,} multiply-adds on a chain of {shape}, exactly "
                   f"{other_mode[0]}; {expected:,} is enough. {other_mode[2]}")
    raise Fail(f"{fn} counted {count:,} multiply-adds on a chain of {shape}; one pass of vectors "
               f"costs {expected:,}. " + QUESTION.trap("matrix-matrix-chain").explanation,
               "matrix-matrix-chain")


# -- checks ------------------------------------------------------------------------------
@QUESTION.check("forward pass: y = A_k ... A_1 x, one matvec per layer", points=1, hints=(
    "Start from x and apply the matrices in the order they act on it: As[0] first.",
    "Each layer maps a vector of length m_{i-1} to one of length m_i; the last one has m_k entries.",
    "Use matvec for each product: the grader counts only the helpers' multiply-adds.",
))
def forward_values(ctx):
    dims = [5, 7, 3, 6]
    As, x = chain(ctx.rng, dims), ctx.rng.standard_normal(dims[0])
    y, count = counted(ctx, "chain_forward", As, x)
    ctx.expect_array("y", y, ctx.ref.chain_forward(As, x), "chain_forward")
    expect_cost("chain_forward", count, one_pass(dims), dims)


@QUESTION.check("JVP (forward mode) matches finite differences, square and non-square chains", points=2, hints=(
    "A tangent v moves through the layers in the same order as x does in the forward pass.",
    "On a chain of non-square matrices only one order of the products fits the shapes; on "
    "square ones the wrong order runs and gives wrong numbers.",
    "J v is the derivative of f(x + t v) at t = 0; for a linear f it is simply f(v).",
))
def jvp_values(ctx):
    for dims in ([6, 6, 6, 6], [5, 8, 3, 7, 4], [4, 6]):
        As = chain(ctx.rng, dims)
        x, v = ctx.rng.standard_normal(dims[0]), ctx.rng.standard_normal(dims[0])
        jv = ctx.call("chain_jvp", As, v)
        traps = {"wrong-order": reversed_product(As) @ v} if len(set(dims)) == 1 else {}
        ctx.expect_array("J v", jv, numerical_jvp(lambda z: ctx.ref.chain_forward(As, z), x, v),
                         "chain_jvp", traps=traps, example=example(ctx, "chain_jvp", "v"))


@QUESTION.check("VJP (reverse mode) matches finite differences, square and non-square chains", points=2, hints=(
    "The cotangent u lives at the output: it meets A_k first and A_1 last.",
    "Going back through a layer h_i = A_i h_{i-1} multiplies the cotangent by A_i transposed.",
    "Check the identity <u, J v> = <J^T u, v> with your chain_jvp on a random chain: it holds "
    "for every u and v only when both are right.",
))
def vjp_values(ctx):
    for dims in ([6, 6, 6, 6], [5, 8, 3, 7, 4], [4, 6]):
        As = chain(ctx.rng, dims)
        x, u = ctx.rng.standard_normal(dims[0]), upstream(ctx.rng, dims[-1])
        uj = ctx.call("chain_vjp", As, u)
        traps = {}
        if len(set(dims)) == 1:
            P = reversed_product(As)
            traps = pick(uj, [("wrong-order", P.T @ u), ("no-transpose", P @ u),
                              ("no-transpose", ctx.ref.chain_jvp(As, u))])
        ctx.expect_gradient("J^T u", uj, lambda z: ctx.ref.chain_forward(As, z), x, u, "chain_vjp",
                            traps=traps, example=example(ctx, "chain_vjp", "u"))


def _jacobian(ctx, fn, traps_of):
    for dims in ([5, 5, 5, 5], [4, 7, 2, 6], [6, 3, 1]):
        As = chain(ctx.rng, dims)
        J = ctx.call(fn, As)
        x = ctx.rng.standard_normal(dims[0])
        expected = numerical_jacobian(lambda z: ctx.ref.chain_forward(As, z), x)
        square = len(set(dims)) == 1
        traps = traps_of(As, J) if square else {}
        if square and ctx.close(J, expected.T) and not ctx.close(J, expected):
            raise Fail(f"`J` from {fn} is the transpose of the Jacobian. J has one row per output "
                       "and one column per input, shape (m_k, m_0): a JVP along e_j is column j, a "
                       "VJP along e_i is row i. Check which axis you stack them along.")
        ctx.expect_array("J", J, expected, fn, traps=traps, example=example(ctx, fn, None))


@QUESTION.check("full Jacobian by forward mode: one JVP per input", points=1, hints=(
    "A JVP along the j-th basis vector of the input space gives one column of J.",
    "J has shape (m_k, m_0): m_0 columns, one per input.",
    "Put the columns side by side (stack them along the second axis).",
))
def jacobian_forward_values(ctx):
    _jacobian(ctx, "jacobian_forward", lambda As, J: {"wrong-order": reversed_product(As)})


@QUESTION.check("full Jacobian by reverse mode: one VJP per output", points=1, hints=(
    "A VJP along the i-th basis vector of the output space gives one row of J.",
    "J has shape (m_k, m_0): m_k rows, one per output.",
    "Put the rows on top of each other (stack them along the first axis).",
))
def jacobian_reverse_values(ctx):
    _jacobian(ctx, "jacobian_reverse", lambda As, J: pick(J, [
        ("wrong-order", reversed_product(As)), ("no-transpose", reversed_product(As).T)]))


@QUESTION.check("the cost of one JVP and one VJP, in multiply-adds", points=2, hints=(
    "Count: how many multiply-adds does one matvec with a (16, 16) matrix cost, and one matmul "
    "of two (16, 16) matrices?",
    "(A_2 A_1) v and A_2 (A_1 v) are equal, but only one of them keeps a vector in hand.",
    "Never form a product of two of the A_i: apply each one to the current vector.",
))
def jvp_vjp_cost(ctx):
    dims = [20, 16, 16, 16, 16, 12]
    As = chain(ctx.rng, dims)
    v, u = ctx.rng.standard_normal(dims[0]), upstream(ctx.rng, dims[-1])
    for fn, vec, name in (("chain_jvp", v, "J v"), ("chain_vjp", u, "J^T u")):
        got, count = counted(ctx, fn, As, vec)
        ctx.expect_array(name, got, getattr(ctx.ref, fn)(As, vec), fn)
        expect_cost(fn, count, one_pass(dims), dims)


@QUESTION.check("the gradient of a scalar output by reverse mode: its cost in multiply-adds", points=2, hints=(
    "With one output, how many VJPs does reverse mode need for the whole Jacobian? How many "
    "JVPs does forward mode need?",
    "jacobian_reverse builds J one row per output: with one output it is a single VJP, about "
    "the price of one forward pass, whatever the number of inputs d.",
    "If jacobian_reverse is right but expensive, look at chain_vjp: its cost must not grow "
    "with the number of inputs.",
))
def scalar_output_cost(ctx):
    dims = [48, 16, 16, 16, 16, 1]
    As = chain(ctx.rng, dims)
    J, count = counted(ctx, "jacobian_reverse", As)
    ctx.expect_array("J", J, ctx.ref.jacobian_reverse(As), "jacobian_reverse")
    S = one_pass(dims)
    expect_cost("jacobian_reverse", count, S, dims,
                other_mode=(f"forward mode's price (one JVP per input: d = {dims[0]} times S = {S:,})",
                            dims[0] * S, "Reverse mode builds J from one VJP per output: here a "
                            "single one, whatever the number of inputs."))


@QUESTION.check("one input, many outputs: forward mode costs one pass", points=1, hints=(
    "With one input, how many JVPs does forward mode need for the whole Jacobian?",
    "jacobian_forward builds J one column per input: with one input it is a single JVP.",
    "Its cost must not grow with the number of outputs.",
))
def single_input_cost(ctx):
    dims = [1, 16, 16, 16, 16, 40]
    As = chain(ctx.rng, dims)
    J, count = counted(ctx, "jacobian_forward", As)
    ctx.expect_array("J", J, ctx.ref.jacobian_forward(As), "jacobian_forward")
    S = one_pass(dims)
    expect_cost("jacobian_forward", count, S, dims,
                other_mode=(f"reverse mode's price (one VJP per output: m_k = {dims[-1]} times S = {S:,})",
                            dims[-1] * S, "Forward mode builds J from one JVP per input: here a "
                            "single one, whatever the number of outputs."))
