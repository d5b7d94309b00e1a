"""loss_scaling's traps, and how an answer is compared and diagnosed (used by the checks in ``__init__.py``).

An answer is compared with the reference (``ctx.ref``) first; only a wrong one is diagnosed.
A state trap is recognised by what the learner's ``update_scale`` or ``amp_step`` does to
the growth counter on an overflow; a clipping trap by which known-wrong variant the
learner's clipped gradients match, each variant built from the reference's own pieces
(never the right math written a second time) on inputs where the variants lie far apart.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.question import Fail, Trap

UPDATE, UNSCALE, CLIP, STEP = "update_scale", "unscale_grads", "clip_grad_norm", "amp_step"
FP16_MAX = 65504.0  # the largest finite float16; a product >= 65520 rounds to inf
RTOL, ATOL_REL = 1e-6, 1e-9  # per entry, plus a floor relative to the largest entry
NEAR = 2e-3  # a float16 rounding apart: close enough to name a variant

TRAPS = [
    Trap("clip-before-unscale", "You clipped the gradients while they were still multiplied by "
         "the loss scale. Their norm was then `scale` times too large (65536 times at PyTorch's "
         "default), so the clip shrank them far too hard, by an amount that changes whenever the "
         "scale does. Unscale first (float64, divided by the scale), check for inf/NaN, and only "
         "then clip the true gradients to max_norm: in PyTorch, scaler.unscale_(optimizer) comes "
         "before clip_grad_norm_."),
    Trap("per-tensor-norm", "You clipped each tensor by its own norm. Global-norm clipping takes "
         "one norm over all the gradients together (the square root of the sum of the squares of "
         "every entry of every tensor) and multiplies every tensor by the same coefficient, so "
         "the update keeps its direction. Clipping each tensor alone turns the update and leaves "
         "a small tensor untouched while a large one is shrunk."),
    Trap("step-on-inf", "The parameters were updated on a step whose float16 gradients "
         "overflowed. Such a step must be skipped entirely: parameters unchanged, no clipping, "
         "skipped = True, clipped = None, and the scale backed off. Make sure the emulated "
         "backward rounds scale * g to float16 (products above 65504 become inf) and that you "
         "test every tensor for inf and NaN before clipping and stepping."),
    Trap("tracker-not-reset", "After an overflow you backed off the scale but kept the growth "
         "counter. The counter counts clean steps in a row since the scale last changed: an "
         "overflow must reset it to 0, or the scale grows back after fewer than growth_interval "
         "clean steps and overflows again."),
    Trap("clip-the-loss", "You clipped (or rescaled) the loss instead of the gradients. The "
         "loss value says nothing about the size of its gradient: a small loss can have a huge "
         "gradient, which then goes through unclipped, and a large loss a tiny one, which is "
         "shrunk for nothing. The loss is only multiplied by the scale; clip the unscaled "
         "gradients by their global norm."),
    Trap("nan-not-checked", "Your overflow check looks for inf but not for NaN. A NaN gradient "
         "(inf - inf or 0 * inf in a float16 backward, or a bad batch) ruins the parameters just "
         "the same. Treat anything non-finite, inf or NaN, in any tensor as an overflow."),
    Trap("unscale-in-fp16", "You divided the gradients by the scale in float16. The scale exists "
         "because small gradients do not survive in float16: dividing there pushes them back "
         "below its smallest normal value (6.1e-5), where they lose their digits or flush to "
         "zero. Convert each array to float64 first, then divide (PyTorch refuses to unscale "
         "float16 gradients for this reason)."),
]
_TRAP = {t.id: t for t in TRAPS}


def explain(trap_id: str) -> str:
    return _TRAP[trap_id].explanation


# -- comparing lists of arrays -------------------------------------------------------------
def same_list(got, expected, rtol=RTOL, atol_rel=ATOL_REL) -> bool:
    """Same length and shapes, values equal to tolerance; inf and NaN must sit in the same places."""
    if len(got) != len(expected) or any(np.shape(g) != np.shape(e) for g, e in zip(got, expected)):
        return False
    top = max([float(np.max(np.abs(e[np.isfinite(e)]), initial=0.0)) for e in expected] + [0.0])
    return all(np.allclose(np.asarray(g, dtype=np.float64), e, rtol=rtol, atol=atol_rel * top,
                           equal_nan=True) for g, e in zip(got, expected))


def rel_err(got, expected) -> float:
    """Largest difference over the largest expected entry (finite lists of one structure)."""
    top = max(float(np.max(np.abs(e), initial=0.0)) for e in expected) or 1.0
    return max(float(np.max(np.abs(np.asarray(g, dtype=np.float64) - e), initial=0.0))
               for g, e in zip(got, expected)) / top


def array_list(ctx, name, got, expected, fn, finite=True, keep_dtype=False) -> list:
    """``got`` as a list of arrays shaped like ``expected``'s, or ``Fail`` saying what is off."""
    if not isinstance(got, (list, tuple)):
        raise Fail(f"{fn} must return `{name}` as a list of arrays (one per tensor), not {type(got).__name__}")
    if len(got) != len(expected):
        raise Fail(f"`{name}` from {fn} holds {len(got)} arrays; expected {len(expected)}, one per tensor")
    out = []
    for i, (g, e) in enumerate(zip(got, expected)):
        if not isinstance(g, np.ndarray) or g.dtype.kind not in "fiub":
            raise Fail(f"`{name}[{i}]` from {fn} must be a numpy array of numbers, not {type(g).__name__}")
        if g.shape != e.shape:
            raise Fail(f"`{name}[{i}]` from {fn} has shape {g.shape}, expected {e.shape}")
        if finite and not np.all(np.isfinite(g)):
            raise Fail(f"`{name}[{i}]` from {fn} has {int(np.sum(~np.isfinite(g)))} NaN or infinite entries")
        out.append(g if keep_dtype else g.astype(np.float64))
    return out


def unscaled_fp16(scaled, scale) -> list[list]:
    """Two forms of the unscale-in-fp16 variant: each quotient rounded to float16, and numpy's
    own float16 division (a Python float scale becomes float16 too: 65536 turns into inf)."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        return [[(s.astype(np.float64) / scale).astype(np.float16).astype(np.float64) for s in scaled],
                [(s / scale).astype(np.float64) for s in scaled]]


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and np.isfinite(x)


def _scalar(x):
    """A 0-d or size-1 numeric array as the number it holds; anything else as it is."""
    if isinstance(x, np.ndarray) and x.size == 1 and x.dtype.kind in "fiu":
        return x.reshape(-1)[0].item()
    return x


# -- update_scale ---------------------------------------------------------------------------
def diagnose_update(ctx, args, got, expected, step=None) -> None:
    """The learner's (scale, growth_tracker) for ``update_scale(*args)`` must equal the reference's."""
    scale, tracker, found_inf, gf, bf, gi = args
    s, t = (_scalar(v) for v in ctx.unpack(got, 2, UPDATE, "scale, growth_tracker"))
    if not (_number(s) and _number(t) and float(t).is_integer()):
        raise Fail(f"{UPDATE} must return (scale, growth_tracker): a finite float and an int, not ({s!r}, {t!r})")
    if ctx.close(s, expected[0]) and int(t) == expected[1]:
        return
    where = f"At step {step + 1}, " if step is not None else ""
    said = (f"{where}update_scale({scale:g}, {tracker}, {found_inf}, growth_factor={gf:g}, "
            f"backoff_factor={bf:g}, growth_interval={gi}) returned ({s:g}, {int(t)}); "
            f"expected ({expected[0]:g}, {expected[1]}).")
    if found_inf and ctx.close(s, expected[0]) and int(t) in (tracker, tracker + 1) and int(t) != 0:
        raise Fail(f"{said} {explain('tracker-not-reset')}", "tracker-not-reset")
    if not found_inf and tracker + 1 == gi and not ctx.close(s, expected[0]):
        said += f" That was the {_ordinal(gi)} clean step in a row: the scale grows now and the counter restarts at 0."
    elif not found_inf and tracker + 1 == gi:
        said += " After growing, the counter restarts at 0."
    elif not found_inf and int(t) != tracker + 1:
        said += " A clean step that does not grow the scale adds 1 to the counter."
    elif found_inf:
        said += " An overflow multiplies the scale by backoff_factor and restarts the counter at 0."
    raise Fail(said)


# -- clip_grad_norm ---------------------------------------------------------------------------
def diagnose_clip(ctx, grads, max_norm, got, expected, what) -> None:
    clipped, total = got
    exp_clipped, exp_total = expected
    if isinstance(clipped, (list, tuple)) and what == "all-zero gradients" and not all(
            isinstance(c, np.ndarray) and np.all(np.isfinite(c)) for c in clipped):
        raise Fail(f"With {what}, `clipped` from {CLIP} holds NaN or inf: the norm is 0, and "
                   "max_norm / (total_norm + 1e-6) keeps the coefficient finite (then clamped to 1).")
    c = array_list(ctx, "clipped", clipped, exp_clipped, CLIP)
    if not same_list(c, exp_clipped):
        per_tensor = [ctx.ref.clip_grad_norm([g], max_norm)[0][0] for g in grads]
        if len(grads) > 1 and same_list(c, per_tensor):
            raise Fail(f"`clipped` from {CLIP} is wrong ({what}). {explain('per-tensor-norm')}", "per-tensor-norm")
        g_all, c_all = np.concatenate([g.ravel() for g in grads]), np.concatenate([x.ravel() for x in c])
        k = float(c_all @ g_all) / float(g_all @ g_all) if np.any(g_all) else 0.0
        coef = min(max_norm / (exp_total + 1e-6), 1.0)
        if np.any(g_all) and np.allclose(c_all, k * g_all, rtol=1e-6, atol=1e-12) and k > 1 + 1e-6:
            raise Fail(f"{CLIP} scaled the gradients up by {k:.4g} ({what}, total norm {exp_total:.4g}, "
                       f"max_norm {max_norm:g}). The coefficient is clamped at 1: clipping only ever shrinks.")
        if np.any(g_all) and np.allclose(c_all, k * g_all, rtol=1e-6, atol=1e-12):
            raise Fail(f"{CLIP} multiplied every tensor by {k:.4g} ({what}); expected {coef:.6g} = "
                       f"max_norm / (total_norm + 1e-6) with total_norm {exp_total:.6g}, clamped at 1.")
        first = next(i for i, (x, e) in enumerate(zip(c, exp_clipped)) if not ctx.close(x, e))
        where = ctx.locate(f"clipped[{first}]", c[first], exp_clipped[first])
        raise Fail(f"`clipped` from {CLIP} is wrong ({what}): expected every tensor multiplied by "
                   f"the same coefficient {coef:.6g}; yours is not a common multiple of the gradients."
                   + (f"\nThe first tensor that differs is clipped[{first}]: {where}" if where else ""))
    total = _scalar(total)  # a 0-d array is a number too
    if isinstance(total, (list, tuple, np.ndarray)):
        raise Fail(f"{CLIP} must return total_norm as one number, the global norm, not a "
                   f"{type(total).__name__} (one norm per tensor is the per-tensor mistake).")
    if not _number(total) or not ctx.close(total, exp_total):
        raise Fail(f"total_norm from {CLIP} is {total!r} ({what}); expected {exp_total:.6g}, the L2 "
                   "norm of all the gradients together, before clipping.")


# -- amp_step -------------------------------------------------------------------------------
def _fp16_products(grads, scale) -> list:
    with np.errstate(over="ignore", invalid="ignore"):
        return [(scale * g).astype(np.float16) for g in grads]


def clip_variants(ref, grads, loss, scale, max_norm) -> list[tuple[str | None, str, list]]:
    """(trap id or None, what it is, the clipped gradients it gives), built from the reference's pieces."""
    scaled = _fp16_products(grads, scale)
    unscaled = ref.unscale_grads(scaled, scale)[0]
    c = min(max_norm / (abs(loss) + 1e-6), 1.0)
    found = [("per-tensor-norm", "", [ref.clip_grad_norm([u], max_norm)[0][0] for u in unscaled]),
             ("clip-before-unscale", "", [x / scale for x in ref.clip_grad_norm(
                 [s.astype(np.float64) for s in scaled], max_norm)[0]]),
             ("clip-the-loss", "", [c * u for u in unscaled]),
             ("clip-the-loss", "", ref.unscale_grads(_fp16_products([c * g for g in grads], scale), scale)[0]),
             *[("unscale-in-fp16", "", ref.clip_grad_norm(form, max_norm)[0])
               for form in unscaled_fp16(scaled, scale) if all(np.isfinite(f).all() for f in form)],
             (None, "Your clipped gradients are the float64 `grads` clipped directly: the step must "
                    "see what the float16 backward produced, scale * g rounded to float16, then "
                    "divided by the scale.", ref.clip_grad_norm(grads, max_norm)[0]),
             (None, "Your clipped gradients were never clipped: clip the unscaled gradients to "
                    "max_norm by their global norm.", unscaled),
             (None, "Your clipped gradients always have norm max_norm, also when they were shorter: "
                    "the coefficient is clamped at 1, so clipping only ever shrinks.",
              [u * (max_norm / (ref.clip_grad_norm(unscaled, max_norm)[1] + 1e-6)) for u in unscaled])]
    if abs(loss) > max_norm:  # a clamped loss has no gradient at all
        found.append(("clip-the-loss", "", [np.zeros_like(u) for u in unscaled]))
    return found


class Steps:
    """Compares the learner's ``amp_step`` with the reference's, one step at a time."""

    def __init__(self, ctx):
        self.ctx = ctx

    def check(self, params, grads, loss, state, hp, what) -> None:
        ctx = self.ctx
        got = ctx.call(STEP, params, grads, loss, state, hp)
        exp_params, exp_state, exp_clipped, exp_skipped = ctx.ref.amp_step(params, grads, loss, state, hp)
        new_params, new_state, clipped, skipped = ctx.unpack(
            got, 4, STEP, "new_params, new_state, clipped, skipped")
        scale, tracker = state
        at = (f"{what} (scale {scale:g}, growth counter {tracker}, loss {loss:.3g}, "
              f"max_norm {hp['max_norm']:g}, growth_interval {hp['growth_interval']})")
        if not isinstance(skipped, (bool, int)) or skipped not in (0, 1):
            raise Fail(f"{STEP} must return `skipped` as True or False, not {skipped!r}")
        products = _fp16_products(grads, scale)
        if bool(skipped) != exp_skipped:
            if not exp_skipped:
                top = max(float(np.max(np.abs(p.astype(np.float64)))) for p in products)
                raise Fail(f"{at}: your step was skipped, but every float16 gradient is finite "
                           f"(the largest |scale * g| rounds to {top:g}, within float16's 65504). "
                           "Skip only when a gradient is inf or NaN.")
            only_nan = not any(np.isinf(p).any() for p in products)
            trap = "nan-not-checked" if only_nan else "step-on-inf"
            bad = "NaN (and no inf)" if only_nan else "inf"
            raise Fail(f"{at}: the float16 gradients hold {bad}, but your step was not skipped. "
                       f"{explain(trap)}", trap)
        self._state(new_state, exp_state, exp_skipped, tracker, at)
        if exp_skipped:
            if clipped is not None:
                raise Fail(f"{at}: the step was skipped, so `clipped` must be None (no gradient was applied).")
            kept = array_list(ctx, "new_params", new_params, params, STEP, finite=False)
            if not same_list(kept, params, rtol=0.0, atol_rel=0.0):
                raise Fail(f"{at}: you reported the step as skipped but changed the parameters. "
                           f"{explain('step-on-inf')}", "step-on-inf")
            return
        c = array_list(ctx, "clipped", clipped, exp_clipped, STEP, keep_dtype=True)
        if not same_list(c, exp_clipped):
            self._clipped(c, grads, loss, scale, hp["max_norm"], exp_clipped, at)
        p = array_list(ctx, "new_params", new_params, exp_params, STEP)
        if not same_list(p, exp_params):
            raise Fail(f"{at}: `new_params` is wrong although `clipped` is right. An SGD step is "
                       "params - lr * clipped, for every tensor.")

    def _state(self, new_state, exp_state, exp_skipped, tracker, at) -> None:
        ctx = self.ctx
        s, t = (_scalar(v) for v in ctx.unpack(new_state, 2, f"{STEP}'s new_state", "scale, growth_tracker"))
        if not (_number(s) and _number(t) and float(t).is_integer()):
            raise Fail(f"{STEP} must return new_state as (scale, growth_tracker), a float and an int, "
                       f"not ({s!r}, {t!r})")
        if ctx.close(s, exp_state[0]) and int(t) == exp_state[1]:
            return
        said = f"{at}: new_state is ({s:g}, {int(t)}); expected ({exp_state[0]:g}, {exp_state[1]})."
        if exp_skipped and ctx.close(s, exp_state[0]) and int(t) in (tracker, tracker + 1) and int(t) != 0:
            raise Fail(f"{said} {explain('tracker-not-reset')}", "tracker-not-reset")
        raise Fail(f"{said} The scale is updated once per step, after it: backed off on an overflow, "
                   "grown after growth_interval clean steps in a row.")

    def _clipped(self, c, grads, loss, scale, max_norm, exp_clipped, at) -> None:
        if any(x.dtype == np.float16 for x in c):
            raise Fail(f"{at}: `clipped` is float16. {explain('unscale-in-fp16')}", "unscale-in-fp16")
        wrong = rel_err(c, exp_clipped)
        best = None
        for trap, text, variant in clip_variants(self.ctx.ref, grads, loss, scale, max_norm):
            if not any(np.any(v) for v in variant):  # a form of zeros explains only exact zeros, not
                err = 0.0 if not any(np.any(x) for x in c) else np.inf  # an answer that is merely small
            else:
                err = rel_err(c, variant)
            if err <= NEAR and err < 0.1 * wrong and (best is None or err < best[0]):
                best = (err, trap, text)
        if best is not None and best[1] is not None:
            raise Fail(f"{at}: `clipped` is wrong. {explain(best[1])}", best[1])
        if best is not None:
            raise Fail(f"{at}: `clipped` is wrong. {best[2]}")
        raise Fail(f"{at}: `clipped` is wrong (largest difference {wrong:.2g} of the largest "
                   "gradient). The order is: float16 products scale * g, divided by the scale in "
                   "float64, checked, then clipped by the global norm.")


def _ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, 2000th."""
    last = {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{'th' if n % 100 in (11, 12, 13) else last}"
