"""vram_trap's traps: the known-wrong recomputations (a segment recomputed from the wrong
input, without its ReLU, with an inclusive mask), run on the check's own inputs, and the
behaviour that names a wrong recomputation whatever its form."""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.question import Trap
from backprop_traps.grader.checks.vram_trap.probes import flat

TRAPS = [
    Trap("stores-everything", "Your gradients are right, but your function keeps every layer's "
         "activations alive until the backward pass, so its memory grows with the depth. Keep only "
         "the input of every segment_size-th layer during the forward pass, recompute one segment "
         "at a time during the backward pass, and drop each segment (let go of every name that "
         "points at its arrays) before moving to the previous one."),
    Trap("wrong-recompute", "Your recomputed segments differ from the forward pass: a segment "
         "recomputed from the wrong activation (another segment's checkpoint, the input x, or the "
         "output of the segment's first layer instead of its input), or with a layer or ReLU left "
         "out, run twice or skipped. Each segment must be recomputed from exactly the array that "
         "entered its first layer in the forward pass, running the same layers."),
    Trap("mask-not-packed", "Your ReLU mask takes a byte or more per element (a bool or uint8 "
         "array of the same size as z, or z itself). The backward pass needs one bit per element: "
         "pack the signs eight to a byte with np.packbits over the flattened array, and unpack them "
         "with np.unpackbits in the backward pass."),
]


def _run(params, h, start, stop, relu=True):
    """Layers start..stop-1 from h: their inputs and outputs [h_start .. h_stop], and their z
    (``relu=False``: a recomputation that forgets the ReLU between the segment's layers)."""
    L, hs, zs = len(params), [h], []
    for i in range(start, stop):
        W, b = params[i]
        zs.append(hs[-1] @ W + b)                                  # N, D_{i+1}
        hs.append(zs[-1] if i == L - 1 or not relu else np.maximum(zs[-1], 0.0))
    return hs, zs


def recomputed_from(params, x, y, s, source, relu=True, inclusive=False):
    """Grads when the segment starting at layer ``start`` is recomputed from the true forward
    activation h_{source(start)} instead of h_start (uniform widths only), ``relu`` as in
    ``_run``, and ``inclusive``: the ReLU's mask taken as z >= 0 instead of z > 0."""
    L, N = len(params), x.shape[0]
    truth, _ = _run(params, x, 0, L)
    dh, grads = (truth[-1] - y) / N, [None] * L
    for start in reversed(range(0, L, s)):
        stop = min(start + s, L)
        hs, zs = _run(params, truth[min(max(source(start), 0), L)], start, stop, relu)
        for i in reversed(range(start, stop)):
            z = zs[i - start]
            dz = dh if i == L - 1 else dh * ((z >= 0) if inclusive else (z > 0))
            grads[i] = (hs[i - start].T @ dz, dz.sum(axis=0))
            dh = dz @ params[i][0].T
    return grads


def backprop(params, x, y, inclusive=False):
    """Plain backpropagation (one segment), with the mask z >= 0 when ``inclusive``: the
    wrong variant the exact zeros of ``dyadic_net`` expose (any widths)."""
    return recomputed_from(params, x, y, len(params), lambda start: start, inclusive=inclusive)


def wrong_recomputes(params, x, y, s) -> dict:
    """The wrong-recompute variants, flattened: from x, from the next layer's input (the
    checkpoint saved after its layer ran), from the previous segment's checkpoint, and a
    recomputation that forgets the ReLU between the segment's layers."""
    sources = (lambda start: 0, lambda start: start + 1, lambda start: start - s)
    return {"wrong-recompute": [flat(recomputed_from(params, x, y, s, source)) for source in sources]
            + [flat(recomputed_from(params, x, y, s, lambda start: start, relu=False))]}


def segment_dependent(ctx, answers: dict, ref_loss: float) -> str | None:
    """"segment_size=a and b give different gradients" when every loss so far is right and two
    segment sizes' gradients differ; None otherwise. Checkpointing must not change a gradient."""
    losses_right = all(isinstance(loss, (int, float, np.floating, np.ndarray)) and np.size(loss) == 1
                       and ctx.close(float(np.asarray(loss).reshape(-1)[0]), ref_loss)
                       for loss, _ in answers.values())
    if not losses_right or len(answers) < 2:
        return None
    sizes = list(answers)
    for a in sizes:
        for b in sizes:
            if a < b and not ctx.close(flat(answers[a][1]), flat(answers[b][1])):
                return f"segment_size={a} and {b} give different gradients"
    return None


def dyadic_net(rng, widths, n):
    """params, x, y of halves in [-1, 1]: every product and sum is exact in float64, so some
    pre-activations are exactly 0, the ReLU's boundary (its derivative there is 0: the mask
    is z > 0). Redrawn until a mask taken as z >= 0 would change the gradients."""
    half = lambda shape: rng.integers(-2, 3, size=shape) / 2.0  # noqa: E731
    for _ in range(100):
        params = [(half((a, b)), half(b)) for a, b in zip(widths[:-1], widths[1:])]
        x, y = half((n, widths[0])), half((n, widths[-1]))
        if not np.allclose(flat(backprop(params, x, y, inclusive=True)), flat(backprop(params, x, y))):
            return params, x, y
    raise RuntimeError("no network with a decisive exact zero drawn")  # never with these sizes
