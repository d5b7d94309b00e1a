"""Cases for kernels/loss_scaling.py and kernels/loss_scaling_v2.py: two ``Case`` objects a
version over one flat buffer of N float16 gradients (``dtype`` is the parameters' and unscaled gradients' type, float32 or float64):

- the fused pass: unscale + inf/NaN check + squared norm (kernel 1), then the one-block
  finish (norm, clip coefficient, scale update); its counter is set so the scale never grows
  while it is timed;
- the whole step: the same two launches, then the clipped SGD update (kernel 3), which
  rewrites the gradients (clipped) and the parameters in place. Each timed launch takes
  another step from the parameters the last one left, which costs the same.

The bytes model counts each buffer once; the whole step really reads the gradients twice
(the norm must be complete before any entry is clipped), so its real traffic is higher.
The per-block partial sums (at most MAX_BLOCKS values) are scratch. PyTorch's counterparts
are the ops GradScaler and clip_grad_norm_ call: ``_amp_foreach_non_finite_check_and_unscale_``,
``linalg.vector_norm``, an in-place multiply and add, ``_amp_update_scale_``; it needs a
float32 (or float64) copy of the float16 gradients first, which ours never materialises.
TINY keeps a simulated launch near 512 threads; LARGE is 2^26 gradients (128 MB of float16,
256 MB per fp32 buffer); HUGE fills an 80 GB GPU. Version 1 (one entry a thread) and version
2 (4 a thread, 128-bit loads) share the gradients' bits and the unscaled gradients (each
launch rewrites them whole); each whole step has its own parameters, scale and counter, so
that its first launch starts from the same state.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, solution

TINY = 300            # N
LARGE = 2 ** 26
HUGE = (4_900_000_000,)
SCALE = 2.0 ** 12  # a power of two: scale * g is exact, so the solution sees the same float16s
LR = 0.01


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import loss_scaling as ls, loss_scaling_v2 as ls2
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("loss_scaling")
    n = shape

    def fill(rng):
        scaled = (rng.standard_normal(n) * 100.0).astype(np.float16)    # N, the float16 backward's output
        params = rng.standard_normal(n).astype(dtype)                     # N
        unscaled, _ = ref.unscale_grads([scaled], SCALE)
        return {"scaled": scaled, "params": params, "total_norm": ref.clip_grad_norm(unscaled, 1.0)[1]}

    host = arrays.make({"scaled": (n, np.float16), "params": (n, dtype), "total_norm": 1.0}, fill)
    scaled, params, total_norm = host.scaled, host.params, host.total_norm
    hp = {"lr": LR, "max_norm": 0.5 * total_norm, "growth_factor": 2.0, "backoff_factor": 0.5,
          "growth_interval": 3}
    tpb = ls.THREADS_PER_BLOCK
    bits = cuda.to_device(scaled.view(np.uint16)) if not arrays.dry else cuda.device_array(n, np.uint16)
    grads = cuda.device_array(n, dtype=dtype)  # rewritten whole by every launch of either case

    def buffers(version):  # the small state a launch sequence updates
        return {"bits": bits, "grads": grads,
                "partials": cuda.device_array(version.grid(n, tpb), dtype=dtype),
                "stats": cuda.device_array(2, dtype=dtype), "found_inf": cuda.to_device(np.zeros(1, np.int32)),
                "scale": cuda.to_device(np.array([SCALE], dtype=dtype)),
                "tracker": cuda.to_device(np.zeros(1, np.int32))}

    def launches(version):
        fused, step = buffers(version), buffers(version)
        step["params"] = cuda.to_device(params)  # updated in place: one copy a version

        def launch_fused():
            version.unscale_device(fused["bits"], fused["scale"], fused["grads"], fused["partials"],
                                   fused["found_inf"], fused["stats"], hp["max_norm"], tpb, fused["tracker"],
                                   (2.0, 0.5, 2 ** 30))  # the counter never reaches growth: the scale stays

        def launch_step():
            version.amp_step_device(step["params"], step["bits"], step["scale"], step["tracker"], step["grads"],
                                    step["partials"], step["found_inf"], step["stats"], hp, tpb)
        return fused, step, launch_fused, launch_step

    def expected_fused():
        unscaled, _ = ref.unscale_grads([scaled], SCALE)
        coef = min(hp["max_norm"] / (total_norm + 1e-6), 1.0)
        return {"grads": unscaled[0], "found_inf": np.zeros(1), "stats": np.array([total_norm, coef])}

    def expected_step():
        grads64 = scaled.astype(np.float64) / SCALE                    # N, d loss / d params
        new_params, (scale, tracker), clipped, _ = ref.amp_step(
            [params.astype(np.float64)], [grads64], 1.0, (SCALE, 0), hp)
        return {"params": new_params[0], "grads": clipped[0], "scale": np.array([scale]),
                "tracker": np.array([tracker])}

    def torch_amp(device, whole_step):
        import torch
        scaled_t, params_t = on_torch(device, scaled, params)
        params_t = params_t.clone()  # updated in place below: never the host array itself
        inv_scale = torch.full((), 1.0 / SCALE, dtype=torch.float32, device=device)
        scale_t = torch.full((), SCALE, dtype=torch.float32, device=device)
        tracker_t = torch.zeros((), dtype=torch.int32, device=device)

        def run():
            g = scaled_t.to(params_t.dtype)  # PyTorch unscales full-precision gradients only
            found = torch.zeros((), dtype=torch.float32, device=device)
            torch._amp_foreach_non_finite_check_and_unscale_([g], found, inv_scale)
            norm = torch.linalg.vector_norm(g)
            coef = torch.clamp(hp["max_norm"] / (norm + 1e-6), max=1.0)
            if not whole_step:
                return {"grads": g, "found_inf": found, "stats": torch.stack([norm, coef])}
            g.mul_(coef)
            params_t.add_(g, alpha=-LR)
            torch._amp_update_scale_(scale_t, tracker_t, found, hp["growth_factor"],
                                     hp["backoff_factor"], hp["growth_interval"])
            return {"params": params_t, "grads": g, "scale": scale_t, "tracker": tracker_t}
        return run

    found = []
    for version, label in ((ls, ""), (ls2, ", v2: 4 a thread, 128-bit loads")):
        fused, step, launch_fused, launch_step = launches(version)
        found += [
            Case(f"loss scaling: unscale + inf/NaN check + norm, fused{label} (N={n})",
                 {"scaled": fused["bits"]}, {"grads": fused["grads"], "found_inf": fused["found_inf"],
                                             "stats": fused["stats"]},
                 launch_fused, expected_fused, lambda dev: torch_amp(dev, False)),
            Case(f"loss scaling: whole step, unscale to clipped SGD{label} (N={n})",
                 {"scaled": step["bits"], "params": step["params"]},
                 {"grads": step["grads"], "params": step["params"], "scale": step["scale"],
                  "tracker": step["tracker"]},
                 launch_step, expected_step, lambda dev: torch_amp(dev, True)),
        ]
    return found
