"""Hidden checks for residual_backward: the backward of a deep stack of residual blocks, its
per-layer gradient norms with and without the skip, and the initial scale that keeps the
backward's variance through ReLU layers.

Shapes: x, dout (N, D); hs, dhs (L + 1, N, D); weights a list of L pairs (W1 (D, H), W2 (H, D)),
F_l(h) = relu(h @ W1_l) @ W2_l. The states are compared with the reference (``ctx.ref``, the
solution notebook); every block's weight gradients with central differences of the reference
forward (``probes``). Per-layer answers say at which layer they first go wrong going down the
stack, and show the smallest stack that is still wrong. Wrong answers are named by equality
with a trap's form on the same inputs (``traps``); each trap has a runnable wrong answer in
tests/answers/residual_backward/.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.checks.residual_backward import probes, traps
from backprop_traps.grader.checks.residual_backward.traps import BWD, FWD, NORMS, STD
from backprop_traps.grader.engine.gradcheck import upstream
from backprop_traps.grader.engine.question import Fail, Question

QUESTION = Question("residual_backward", "Residual connections: the identity's gradient path, and "
                    "the initial scale from the backward", traps=traps.TRAPS, difficulty="medium",
                    kinks={"relu-at-0": "a pre-activation h_l @ W1_l exactly 0 (the mask is z > 0)"},
                    axes={"dhs": ("layer l", "row n", "feature"), "hs": ("layer l", "row n", "feature")})


def where(L, N, D, H, skip) -> str:
    return f"L={L}, N={N}, D={D}, H={H}, {'with' if skip else 'without'} the skip"


def learner_backward(ctx, dout, hs, weights, skip, at):
    """The learner's (dhs, grads), their form checked: grads a list of L pairs."""
    dhs, grads = ctx.unpack(ctx.call(BWD, dout, hs, weights, skip), 2, BWD, "dhs, grads")
    if not isinstance(grads, (list, tuple)) or len(grads) != len(weights) or not all(
            isinstance(g, (list, tuple)) and len(g) == 2 for g in grads):
        raise Fail(f"{BWD} must return `grads` as a list of {len(weights)} pairs (dW1, dW2), one per "
                   f"block ({at}).")
    return dhs, grads


def expect_dhs(ctx, dhs, dout, hs, weights, skip, at):
    """dhs against the reference, with the layer it first goes wrong at and a small example."""
    expected = ctx.ref.residual_backward(dout, hs, weights, skip)[0]
    forms = traps.backward_forms(dout, hs, weights, skip).get("dhs")
    example = probes.backward_example(ctx, skip)

    def details():
        text = probes.layers_sentence("dhs", dhs, expected, len(weights)) if isinstance(dhs, np.ndarray) \
            and dhs.shape == expected.shape else ""
        small = example()
        return "\n".join(t for t in (text, small) if t)
    try:
        ctx.expect_array("dhs", dhs, expected, BWD, traps=forms, example=details)
    except Fail as failure:
        head, _, rest = failure.feedback.partition("\n")
        raise Fail(f"{head.rstrip('.')} ({at})." + (f"\n{rest}" if rest else ""), failure.trap) from None


def expect_weight_grads(ctx, grads, dout, x, weights, skip, at):
    """Every block's dW2 and dW1, top block first, against central differences."""
    forms = traps.backward_forms(dout, ctx.ref.residual_forward(x, weights, skip), weights, skip)
    reference = ctx.ref.residual_backward(dout, ctx.ref.residual_forward(x, weights, skip), weights, skip)[1]
    for layer in reversed(range(len(weights))):
        for index, name in ((1, f"dW2[{layer}]"), (0, f"dW1[{layer}]")):
            def out_of(value, layer=layer, index=index):
                changed = [list(pair) for pair in weights]
                changed[layer][index] = value
                return ctx.ref.residual_forward(x, [tuple(p) for p in changed], skip)[-1]
            try:
                ctx.expect_gradient(name, grads[layer][index], out_of, weights[layer][index], dout, BWD,
                                    traps=forms.get(name), reference=reference[layer][index])
            except Fail as failure:
                head, _, rest = failure.feedback.partition("\n")
                below = (f" Block {layer} is the first wrong one going down: the blocks above it are "
                         "right.") if layer < len(weights) - 1 else ""
                raise Fail(f"{head.rstrip('.')} ({at}).{below}" + (f"\n{rest}" if rest else ""),
                           failure.trap) from None


def run_backward(ctx, L, N, D, H, skip, states=True, weight_grads=True):
    x, weights = probes.away_from_kinks(ctx.rng, ctx.ref, L, N, D, H, skip)
    hs = ctx.ref.residual_forward(x, weights, skip)
    dout = upstream(ctx.rng, x.shape)
    at = where(L, N, D, H, skip)
    dhs, grads = learner_backward(ctx, dout, hs, weights, skip, at)
    if states:
        expect_dhs(ctx, dhs, dout, hs, weights, skip, at)
    if weight_grads:
        expect_weight_grads(ctx, grads, dout, x, weights, skip, at)


@QUESTION.check("forward: every block's output, with and without the skip", points=2, hints=(
    "What does a block add to its input when the skip is on, and what does it output when it is off?",
    "hs[0] is x itself; hs[l + 1] comes from hs[l] through block l.",
))
def forward_values(ctx):
    for L, N, D, H in ((3, 4, 5, 6), (1, 1, 2, 3)):
        x, weights = probes.away_from_kinks(ctx.rng, ctx.ref, L, N, D, H, True)
        for skip in (True, False):
            got = ctx.call(FWD, x, weights, skip)
            expected = ctx.ref.residual_forward(x, weights, skip)
            def details(got=got, expected=expected, L=L, skip=skip):
                where_ = probes.layers_sentence("hs", got, expected, L, up=True) \
                    if isinstance(got, np.ndarray) and got.shape == expected.shape else ""
                return "\n".join(t for t in (where_, probes.forward_example(ctx, skip)()) if t)
            try:
                ctx.expect_array("hs", got, expected, FWD, example=details)
            except Fail as failure:
                head, _, rest = failure.feedback.partition("\n")
                raise Fail(f"{head.rstrip('.')} ({where(L, N, D, H, skip)})." + (f"\n{rest}" if rest else ""),
                           failure.trap) from None


@QUESTION.check("backward with the skip: the gradient reaching every layer", points=3, hints=(
    "h_{l+1} = h_l + F(h_l): along how many paths does the gradient from above reach h_l?",
    "One path goes through F (back through W2, the ReLU's mask and W1); the other is the identity, "
    "whose Jacobian is I.",
    "Walk the blocks from the top down; each layer's gradient is the one from above plus what F "
    "sends back, once.",
))
def states_with_skip(ctx):
    run_backward(ctx, 4, 3, 4, 5, True, weight_grads=False)


@QUESTION.check("backward with the skip: every block's weight gradients", points=2, hints=(
    "Which gradient does block l's W2 see: the one at its own output, h_{l+1}?",
    "dW2 = a^T dh_{l+1} with a = relu(h_l W1); dW1 = h_l^T dz, dz the gradient at the pre-activation.",
))
def weights_with_skip(ctx):
    run_backward(ctx, 3, 3, 4, 5, True, states=False)


@QUESTION.check("backward without the skip: every layer and every block's weights", points=2, hints=(
    "Without the skip, what is left of the block's backward?",
    "The same walk down the stack, with no identity term.",
))
def without_skip(ctx):
    run_backward(ctx, 3, 3, 4, 5, False)


@QUESTION.check("a pre-activation at exactly 0: the gradients through the ReLU", points=1,
                kinks=("relu-at-0",), hints=(
    "Which comparison makes the forward's max(z, 0) pass nothing at z = 0?",
    "The mask is z > 0: at exactly 0 no gradient passes, as in PyTorch.",
))
def relu_kink(ctx):
    L, N, D, H = 2, 4, 3, 4
    for skip in (True, False):
        x, weights = probes.on_the_kink(ctx.rng, L, N, D, H)
        hs = ctx.ref.residual_forward(x, weights, skip)
        dout = np.round(upstream(ctx.rng, x.shape), 1)
        at = where(L, N, D, H, skip) + ", pre-activations exactly 0 in places"
        dhs, grads = learner_backward(ctx, dout, hs, weights, skip, at)
        expect_dhs(ctx, dhs, dout, hs, weights, skip, at)
        expected = ctx.ref.residual_backward(dout, hs, weights, skip)[1]
        for layer in reversed(range(L)):
            for index, name in ((1, f"dW2[{layer}]"), (0, f"dW1[{layer}]")):
                try:
                    ctx.expect_array(name, grads[layer][index], expected[layer][index], BWD)
                except Fail as failure:  # the input on the first line, as for dhs
                    head, _, rest = failure.feedback.partition("\n")
                    raise Fail(f"{head.rstrip('.')} ({at})." + (f"\n{rest}" if rest else ""),
                               failure.trap) from None


@QUESTION.check("gradient norms through 20 blocks, with the skip and without it", points=2, hints=(
    "Each norm is over a whole layer's gradient, all N rows and D features: one number per layer.",
    "Run the forward and the backward twice, once with the skip and once without, on the same "
    "weights.",
    "Entry l is the norm of dhs[l]: the last one is the norm of dout itself.",
))
def deep_norms(ctx):
    L, N, D, H = 20, 6, 8, 8
    x, weights = ctx.rng.standard_normal((N, D)), probes.stack(ctx.rng, L, D, H, branch=0.7)
    dout = upstream(ctx.rng, x.shape)
    got = ctx.unpack(ctx.call(NORMS, dout, x, weights), 2, NORMS, "with_skip, without_skip")
    want = ctx.ref.gradient_norms(dout, x, weights)
    forms = {"with_skip": traps.norm_forms(dout, x, weights, ctx.ref.residual_forward), "without_skip": None}
    for index, (name, g, w) in enumerate(zip(("with_skip", "without_skip"), got, want)):
        def details(g=g, w=w, name=name, index=index):
            where_ = probes.layers_sentence(name, g, w, L) if isinstance(g, np.ndarray) and g.shape == w.shape else ""
            return "\n".join(t for t in (where_, probes.norms_example(ctx, index, name)()) if t)
        ctx.expect_array(name, g, w, NORMS, traps=forms[name], example=details)


def expect_std(ctx, shape, mode, slope):
    got = ctx.call(STD, shape, mode, slope)
    want = np.asarray(ctx.ref.kaiming_std(shape, mode, slope))
    call = f"{STD}({shape}, {mode!r}, {slope})"
    ctx.expect_array("std", got, want, STD, traps=traps.std_forms(shape, mode, slope),
                     example=lambda: f"The call: {call}, expected {float(want):.6g}, got {np.asarray(got, dtype=float).ravel()[0]:.6g}.")


@QUESTION.check("kaiming_std for ReLU layers: the fan_in and the fan_out scale", points=2, hints=(
    "Which of W's two dimensions is summed over in the forward, h @ W, and which in the backward, "
    "dz @ W^T?",
    "A ReLU passes half of what reaches it: the variance of what comes out is half the variance of "
    "what goes in.",
    "Solve fan * Var(W) * 1/2 = 1 for the fan the chosen pass sums over.",
))
def std_relu(ctx):
    for shape in ((512, 128), (96, 384)):
        for mode in ("fan_in", "fan_out"):
            expect_std(ctx, shape, mode, 0.0)


@QUESTION.check("kaiming_std with a leaky slope, and for a linear layer (slope 1)", points=1, hints=(
    "A leaky ReLU with slope a keeps (1 + a^2) / 2 of the variance.",
    "With a = 1 there is no bend: the scale is that of a linear layer.",
))
def std_leaky(ctx):
    expect_std(ctx, (200, 50), "fan_in", 0.2)
    expect_std(ctx, (50, 200), "fan_out", 0.01)
    expect_std(ctx, (200, 50), "fan_in", 1.0)


@QUESTION.check("inputs left unchanged (and the answers right)", points=1, hints=(
    "Does a function change x, dout, hs or a weight in place (+=, *=, a ReLU applied in place)?",
    "Build results in new arrays.",
))
def inputs_unchanged(ctx):
    x, weights = probes.away_from_kinks(ctx.rng, ctx.ref, 2, 3, 4, 5, True)
    hs = ctx.ref.residual_forward(x, weights, True)
    dout = upstream(ctx.rng, x.shape)
    ctx.expect_inputs_unchanged([
        (FWD, (x, weights, True), ["x", "weights"], hs),
        (BWD, (dout, hs, weights, True), ["dout", "hs", "weights"], ctx.ref.residual_backward(dout, hs, weights, True)),
        (NORMS, (dout, x, weights), ["dout", "x", "weights"], ctx.ref.gradient_norms(dout, x, weights)),
    ])
