"""Hidden checks for softmax_ce: derive and implement d(loss)/d(logits) = softmax - onehot.

Shapes: logits (N, K), labels int64 (N,), z (K,), J (K, K). The reference is the solution
notebook (``ctx.ref``); even the plain softmax used for finite differences is read off the
reference's fused gradient. The known-wrong variants below are the traps, computed here on
the same inputs so a wrong answer can be named.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine import gradcheck
from backprop_traps.grader.engine.context import low_precision, same_answer
from backprop_traps.grader.engine.question import Fail, Question, Trap

CE, JAC = "softmax_cross_entropy", "softmax_jacobian"
ONE = np.float64(1.0)  # the loss is the output itself: no upstream gradient to contract with

QUESTION = Question("softmax_ce", "Derive and implement d(loss)/d(logits) = softmax - onehot", traps=[
    Trap("batch-not-averaged", "The loss is the mean of the row losses over the batch, not their "
         "sum: divide the summed loss by the batch size N, and the gradient of every row then "
         "carries the same factor 1 / N.",
         symptom="Your loss and dlogits are N times too large: summed over the batch, not averaged.",
         hints=("Double the batch by repeating every row: should the loss double, or stay the same?",
                "The loss is the mean of the row losses, so each row's gradient carries a factor 1 / N.",
                "Divide the summed loss, and with it dlogits, by the number of rows N.")),
    Trap("overflow", "With large logits your answer overflows (exp of 1e4 is inf), divides 0 by 0, "
         "takes the log of a probability that underflowed to 0, or an epsilon inside the log "
         "hides it and gives the wrong loss. Subtract each row's "
         "max before exponentiating, and take the loss from the log-softmax (shifted logit minus "
         "the log of the sum of exponentials) rather than from the log of a probability."),
    Trap("missing-onehot", "Your dlogits is the softmax alone. The gradient of minus the log "
         "probability of the true class is the softmax minus the one-hot label, so subtract 1 at "
         "each row's true class (before dividing by N); then every row sums to 0."),
    Trap("sign-flipped", "Your answer has the wrong sign: one-hot minus softmax is the direction "
         "that increases the loss. The gradient of the cross-entropy is softmax minus one-hot; "
         "the loss is minus the mean log-probability of the true class, a positive number."),
    Trap("jacobian-diag-only", "Your Jacobian is diagonal: every entry off the diagonal is 0. "
         "Every probability depends on every logit through the shared normaliser, so each "
         "off-diagonal entry is -p_i p_j: the Jacobian is diag(p) minus the outer product of p "
         "with itself (and its diagonal is p_i (1 - p_i), not p_i)."),
], kinks={},
    shrink={"softmax_cross_entropy": {"N": [(0, 0), (1, 0)]}})  # fewer rows are still a batch


# -- input generators ------------------------------------------------------------------
def moderate(rng, n, k):
    """Logits of moderate size (scale 0.5 to 3) and random labels."""
    logits = rng.standard_normal((n, k)) * rng.uniform(0.5, 3.0)
    return logits, rng.integers(0, k, size=n)


def huge(rng, n, k):
    """Logits up to +-1e4: without the max shift, exp overflows to inf or underflows to 0.
    Row 0 sits near +1e4, row 1 near -1e4 (both have a non-trivial softmax), row 2 has an
    exact tie at the top; the rest are uniform in [-1e4, 1e4] (true class far below the max)."""
    logits = rng.uniform(-1e4, 1e4, size=(n, k))
    logits[0] = 1e4 + rng.standard_normal(k)
    logits[1] = -1e4 + rng.standard_normal(k)
    logits[2, :2] = 1e4
    return logits, rng.integers(0, k, size=n)


# -- the reference, read through ctx.ref -------------------------------------------------
def reference(ctx, logits, labels):
    loss, dlogits = ctx.ref.softmax_cross_entropy(logits, labels)
    return float(loss), dlogits


def softmax_rows(ctx, logits, labels):
    """softmax(logits) from the reference's fused gradient: (p - onehot) / N."""
    _, dlogits = reference(ctx, logits, labels)
    return dlogits * logits.shape[0] + onehot(labels, logits.shape[1])


def softmax(ctx, z):
    """softmax of one row z (K,), for the Jacobian's finite differences."""
    return softmax_rows(ctx, z[None, :], np.zeros(1, dtype=np.int64))[0]


def onehot(labels, k):
    """(N, K) with a 1 at each row's label (never np.eye(K): K may be 32768)."""
    out = np.zeros((len(labels), k))
    out[np.arange(len(labels)), labels] = 1.0
    return out


def numerical_jacobian(f, z, eps=gradcheck.EPS):
    """Central differences, one column per logit: J[:, j] = d f(z) / d z_j."""
    cols = []
    for j in range(z.size):
        step = np.zeros_like(z)
        step[j] = eps
        cols.append((f(z + step) - f(z - step)) / (2 * eps))
    return np.stack(cols, axis=1).reshape(z.size, z.size)


# -- the known-wrong variants (traps) ---------------------------------------------------
def wrong_dlogits(ctx, logits, labels):
    """(trap, dlogits) pairs; the first pair that matches names the mistake."""
    n = logits.shape[0]
    _, right = reference(ctx, logits, labels)
    p = softmax_rows(ctx, logits, labels)
    return [("batch-not-averaged", right * n), ("missing-onehot", p / n), ("missing-onehot", p),
            ("sign-flipped", -right), ("sign-flipped", -right * n)]


def wrong_losses(ctx, logits, labels):
    """(trap, loss) pairs: a summed loss and a negated one. (A log(p + eps) is named by its
    behaviour, right on moderate logits and wrong on huge ones: see ``huge_logits``.)"""
    loss, _ = reference(ctx, logits, labels)
    return [("batch-not-averaged", loss * len(labels)), ("sign-flipped", -loss)]


def batch(logits) -> dict:
    """The sizes a wrong factor may be, for the feedback (``feedback.describe_factor``)."""
    return {"N, the batch size": logits.shape[0]}


def first_match(ctx, got, pairs):
    for trap, wrong in pairs:
        if np.shape(got) == np.shape(wrong) and ctx.close(got, wrong):
            return trap
    return None


# -- reading the learner's answer ------------------------------------------------------------
def loss_value(loss, logits) -> float:
    """The loss as a float: a Python float, or a 0-d / size-1 numeric array is accepted."""
    if isinstance(loss, (int, float)) and not isinstance(loss, bool):
        return float(loss)
    if isinstance(loss, np.ndarray) and loss.size == 1 and loss.dtype.kind in "fiu":
        return float(loss.reshape(-1)[0])
    if isinstance(loss, np.ndarray):
        swapped = " (did you return (dlogits, loss) instead of (loss, dlogits)?)" if loss.shape == logits.shape else ""
        raise Fail(f"{CE} must return the loss as one number (a Python float, the batch mean), "
                   f"but it returned an array of shape {loss.shape}{swapped}")
    raise Fail(f"{CE} must return the loss as a Python float, but it returned {type(loss).__name__}")


def call_ce(ctx, logits, labels):
    loss, dlogits = ctx.unpack(ctx.call(CE, logits, labels), 2, CE, "loss, dlogits")
    return loss_value(loss, logits), dlogits


def expect_loss(ctx, loss, logits, labels):
    expected, _ = reference(ctx, logits, labels)
    if ctx.close(loss, expected):
        return
    trap = first_match(ctx, loss, wrong_losses(ctx, logits, labels))
    why = f" {QUESTION.trap(trap).explanation}" if trap else ""
    factor = ctx.factor_sentence("loss", np.float64(loss), np.float64(expected), batch(logits))
    raise Fail(f"the loss from {CE} is {loss + 0.0:.6g}, expected {expected + 0.0:.6g} "
               f"(N={logits.shape[0]}, K={logits.shape[1]})." + (f" {factor}" if factor else "")
               + why, trap)


def expect_dlogits(ctx, dlogits, logits, labels):
    """dlogits must be d loss / d logits: finite differences of the reference loss."""
    dlogits = ctx.as_array("dlogits", dlogits, logits, CE)
    f = lambda x: reference(ctx, x, labels)[0]  # noqa: E731
    try:
        ctx.expect_gradient("dlogits", dlogits, f, logits, ONE, CE)
    except Fail:
        if ctx.close(dlogits, reference(ctx, logits, labels)[1]):
            raise  # right values in a narrower dtype than the contract's: the dtype is the mistake
        trap = first_match(ctx, dlogits, wrong_dlogits(ctx, logits, labels))
        if trap is None:
            raise
        factor = ctx.factor_sentence("dlogits", dlogits, reference(ctx, logits, labels)[1], batch(logits))
        raise Fail(f"`dlogits` from {CE} does not match finite differences "
                   f"(N={logits.shape[0]}, K={logits.shape[1]}). " + (f"{factor} " if factor else "")
                   + QUESTION.trap(trap).explanation, trap) from None


def expect_values(ctx, name, got, expected, fn, pairs):
    """``got`` must equal the reference's ``expected``; else name the matching trap, if any."""
    got = ctx.as_array(name, got, expected, fn)
    if ctx.close(got, expected):
        return
    counts = batch(got) if got.ndim == 2 and fn == CE else None
    raise ctx.mismatch(name, got, expected, fn, counts=counts, trap=first_match(ctx, got, pairs))


def non_finite(value) -> bool:
    return isinstance(value, np.ndarray) and value.dtype.kind == "f" and not np.all(np.isfinite(value))


def overflowed(fn: str, outputs: dict | None = None) -> Fail:
    """The overflow trap's failure; ``outputs`` (name -> value) say which are not finite, where."""
    where = []
    for name, value in (outputs or {}).items():
        try:
            value = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):  # not numbers: its own check says so
            continue
        bad = ~np.isfinite(value)
        if value.ndim == 0 and bad:
            where.append(f"`{name}` is {float(value)}")
        elif bad.any():
            rows = np.flatnonzero(bad.reshape(len(value), -1).any(axis=1))
            where.append(f"`{name}` is NaN or infinite at {int(bad.sum())} of {bad.size} entries "
                         f"(rows {', '.join(str(r) for r in rows)} of 0 to {len(value) - 1})")
    said = f" ({'; '.join(where)})" if where else ""
    return Fail(f"{fn} returned NaN or infinite values for logits of size up to 1e4{said}. "
                f"{QUESTION.trap('overflow').explanation}", "overflow")


def check_ce(ctx, logits, labels):
    loss, dlogits = call_ce(ctx, logits, labels)
    expect_loss(ctx, loss, logits, labels)
    expect_dlogits(ctx, dlogits, logits, labels)


def expect_jacobian(ctx, z, example=False):
    """J must be symmetric and match central differences of the reference softmax."""
    got = ctx.call(JAC, z)
    if non_finite(got):
        raise overflowed(JAC)
    got = ctx.as_array("J", got, np.zeros((z.size, z.size)), JAC)
    expected = ctx.ref.softmax_jacobian(z)
    inputs = {"z": z}
    off = ~np.eye(z.size, dtype=bool)
    if off.any() and np.allclose(got[off], 0.0, atol=1e-12) and not np.allclose(expected[off], 0.0, atol=1e-12):
        raise Fail(f"`J` from {JAC} is wrong (K={z.size}). {QUESTION.trap('jacobian-diag-only').explanation}"
                   + (f"\n{ctx.example(inputs, expected, got)}" if example else ""), "jacobian-diag-only")
    if not np.allclose(got, got.T, rtol=gradcheck.GRAD_RTOL, atol=1e-12):
        raise Fail(f"`J` from {JAC} is not symmetric (K={z.size}): d p_i / d z_j must equal "
                   "d p_j / d z_i." + (f"\n{ctx.example(inputs, expected, got)}" if example else ""))
    numeric = numerical_jacobian(lambda v: softmax(ctx, v), z)
    if gradcheck.rel_error(got, numeric) <= gradcheck.GRAD_RTOL:
        return
    traps = {"jacobian-diag-only": np.diag(np.diag(expected))}
    raise ctx.mismatch("J", got, expected, JAC, traps,
                       ctx.example(inputs, expected, got) if example else None)


# -- checks ------------------------------------------------------------------------------
@QUESTION.check("loss and dlogits match finite differences (random batches and K)", points=3, hints=(
    "The loss is the mean over rows of minus the log-probability of each row's true class.",
    "Differentiate -log p[label] with respect to every logit: the softmax's normaliser touches them all.",
    "Averaging over N rows scales each row's gradient by 1 / N.",
))
def loss_and_gradient(ctx):
    for n, k in ((2, 3), (5, 7), (8, 10), (16, 24)):
        check_ce(ctx, *moderate(ctx.rng, n, k))


def right_on_moderate_logits(ctx) -> bool:
    """Whether the learner's cross-entropy is right on logits of moderate size: then a wrong
    answer on huge ones is the overflow family, whatever its form (no max subtraction, a
    log(p + eps) with any small eps, a clipped probability)."""
    logits, labels = moderate(ctx.rng, 6, 10)
    result = ctx.sandbox.call(CE, logits, labels)
    if not result.ok:
        return False
    right = ctx.ref.softmax_cross_entropy(logits, labels)
    if same_answer(result.value, right):
        return True
    # a recognised scale factored out (the batch-not-averaged factor N, named by its own checks):
    # the rest is what the size of the logits is tested against (issue 24, class 3)
    n = logits.shape[0]
    return same_answer(result.value, (right[0] * n, right[1] * n))


@QUESTION.check("logits up to +-1e4: finite and correct", points=2, hints=(
    "What is exp(1e4) in float64? And exp(-1e4)?",
    "Softmax does not change when you subtract the same number from every logit of a row.",
    "A probability can underflow to exactly 0; its log cannot be recovered, a log-softmax can.",
))
def huge_logits(ctx):
    logits, labels = huge(ctx.rng, 6, 10)
    loss, dlogits = call_ce(ctx, logits, labels)
    narrow = low_precision("dlogits", dlogits, CE, reference(ctx, logits, labels)[1],
                           QUESTION.contract_dtype(CE, "dlogits"))
    if narrow:  # the dtype is the mistake, not an overflow: say so and name no trap
        raise Fail(narrow)
    if not np.isfinite(loss) or non_finite(dlogits):
        raise overflowed(CE, {"loss": loss, "dlogits": dlogits})
    try:
        expect_loss(ctx, loss, logits, labels)
        _, expected = reference(ctx, logits, labels)
        expect_values(ctx, "dlogits", dlogits, expected, CE, wrong_dlogits(ctx, logits, labels))
    except Fail as fail:
        if fail.trap is None and right_on_moderate_logits(ctx):
            raise Fail(f"{fail.feedback} Your answer is right for logits of moderate size, so it is "
                       f"their size that breaks it. {QUESTION.trap('overflow').explanation}",
                       "overflow") from None
        raise


@QUESTION.check("edge shapes: N = 1, K = 1, K = 2", points=1, hints=(
    "With one class the softmax is 1 whatever the logit: the loss and its gradient are 0.",
    "Do your reductions keep working when a dimension has size 1?",
    "A row of equal logits is a uniform softmax, 1 / K each; a tie at the top is no special case.",
))
def edge_shapes(ctx):
    for n, k in ((1, 6), (5, 1), (4, 2), (1, 1), (1, 2)):
        check_ce(ctx, *moderate(ctx.rng, n, k))
    # exact ties: rows of equal logits (zeros among them) and the true class tied at the top
    logits = np.array([[0.0, 0.0, 0.0, 0.0], [2.5, 2.5, 2.5, 2.5], [3.0, 3.0, -1.0, 0.5],
                       [-2.0, 1.0, 1.0, 1.0]])
    check_ce(ctx, logits, np.array([2, 0, 1, 3], dtype=np.int64))


@QUESTION.check("vocabulary-sized rows (K = 32768)", points=1, hints=(
    "Vectorise over the batch and the classes; one pass of max, exp, sum and log per row.",
    "With 32768 classes most probabilities are tiny: subtracting the one-hot still matters.",
))
def vocabulary_sized(ctx):
    logits, labels = moderate(ctx.rng, 4, 32768)
    check_ce(ctx, logits, labels)  # 131072 logits: random-direction gradient checks


@QUESTION.check("dlogits: the total of each row", points=1, hints=(
    "Adding the same number to every logit of a row leaves the loss unchanged.",
    "So the gradient along (1, 1, ..., 1) vanishes: a row's entries must cancel.",
))
def rows_sum_to_zero(ctx):
    """Only what the name says: every row sums to 0, relative to the row's own size (a scaled
    answer whose rows cancel passes here and fails the value checks). A row of zeros sums to 0
    but cancels nothing, so it fails: an answer of zeros gets no point."""
    logits, labels = moderate(ctx.rng, 7, 50)
    logits *= 3.0
    _, dlogits = call_ce(ctx, logits, labels)
    dlogits = ctx.as_array("dlogits", dlogits, logits, CE)
    size = np.abs(dlogits).sum(axis=1)                                # N
    empty = np.flatnonzero(size == 0.0)
    if empty.size:
        raise Fail(f"row {int(empty[0])} of `dlogits` from {CE} is all zeros: it sums to 0 without "
                   "any gradient to cancel.")
    relative = np.abs(dlogits.sum(axis=1)) / size                     # N
    worst = int(np.argmax(relative))
    if relative[worst] <= 1e-10:
        return
    trap = first_match(ctx, dlogits, wrong_dlogits(ctx, logits, labels))
    why = QUESTION.trap(trap).explanation if trap else (
        "Adding the same number to every logit of a row changes no probability, so the gradient "
        "along (1, ..., 1) must vanish.")
    if trap is None and relative[worst] < 1e3 * np.finfo(np.float32).eps:
        why += (f" The row cancels to {relative[worst]:.1e} of its size, about float32's rounding "
                f"({np.finfo(np.float32).eps:.1e}); in float64 throughout it cancels to about 1e-16.")
    raise Fail(f"row {worst} of `dlogits` from {CE} sums to {dlogits[worst].sum():.6g}, not 0 "
               f"(its entries add up to {size[worst]:.3g} in absolute value). {why}", trap)


@QUESTION.check("softmax_jacobian: symmetric and matches finite differences", points=2, hints=(
    "Each p_i depends on every z_j through the shared sum of exponentials.",
    "Use the quotient rule for i = j and for i != j separately, then write both as one matrix.",
    "With one logit the softmax is 1 whatever z is: its Jacobian is [[0]]. Large z must not overflow.",
))
def jacobian(ctx):
    for k in (3, 6, 12):
        expect_jacobian(ctx, ctx.rng.standard_normal(k) * 2.0, example=(k == 3))
    for k in (1, 2):  # the edges: one logit (J = [[0]]), two
        expect_jacobian(ctx, ctx.rng.standard_normal(k))
    expect_jacobian(ctx, np.full(4, 0.5))  # a tie everywhere: the uniform softmax
    # logits up to +-1e4: exact against the reference (finite differences lose all precision)
    for z in (huge(ctx.rng, 3, 6)[0].reshape(-1), 1e4 + ctx.rng.standard_normal(5),
              -1e4 + ctx.rng.standard_normal(5)):
        got = ctx.call(JAC, z)
        if non_finite(got):
            raise overflowed(JAC)
        expected = ctx.ref.softmax_jacobian(z)
        expect_values(ctx, "J", got, expected, JAC, [("jacobian-diag-only", np.diag(np.diag(expected)))])


@QUESTION.check("inputs left unchanged", points=1, hints=(
    "Does either function subtract the max from `logits` or `z` in place?",
))
def inputs_unchanged(ctx):
    logits, labels = moderate(ctx.rng, 4, 6)
    z = ctx.rng.standard_normal(5) + 3.0
    ctx.expect_inputs_unchanged([
        (CE, (logits, labels), ["logits", "labels"], ctx.ref.softmax_cross_entropy(logits, labels)),
        (JAC, (z,), ["z"], ctx.ref.softmax_jacobian(z))])
