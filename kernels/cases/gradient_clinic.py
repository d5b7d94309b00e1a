"""Cases for kernels/gradient_clinic.py and kernels/gradient_clinic_v2.py: two ``Case`` objects
a version, the measurements a training loop logs every step, so both must cost one read of
what they measure:

- the per-layer norms: one layer's gradient, weight before and weight after, P values each,
  read once (kernel 1, per-block sums of squares in float64), then the fixed-order finish
  (kernel 2) writes the three norms. The per-block partials (at most MAX_BLOCKS rows) are
  scratch. PyTorch's counterpart is three ``linalg.vector_norm`` calls, one of them on
  ``after - before``, which it materialises;
- the dead units: z (N, D) read at most once (kernel 3: version 1 a thread a unit walking
  every row; version 2 its rows in parts, a flag a part and unit, scratch, then one thread a
  unit). PyTorch's counterpart is ``(z <= 0).all(dim=0)``.

TINY keeps a simulated launch near 300 threads; LARGE is a 4096 x 8192 layer (128 MB per
fp32 tensor, 384 MB read for the norms) and a 8192 x 8192 batch of pre-activations (256 MB);
HUGE fills an 80 GB GPU with one layer, and with 2M units.
Shape letters as in the kernel module.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, solution

TINY = ((13, 17), (6, 50))       # W (D_in, D_out); z (N, D)
LARGE = ((4096, 8192), (8192, 8192))
HUGE = (((80_000, 65_536), (8192, 8192)), ((4096, 8192), (8192, 2_000_000)))


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import gradient_clinic as gc, gradient_clinic_v2 as gc2
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("gradient_clinic")
    w_shape, z_shape = shape

    def fill(rng):
        before = rng.standard_normal(w_shape).astype(dtype)
        grad = (1e-2 * rng.standard_normal(w_shape)).astype(dtype)
        after = (before - 0.5 * grad).astype(dtype)
        z = (rng.standard_normal(z_shape) - 2.0).astype(dtype)  # about 2% of the units never fire
        z[:, :: 7] = -np.abs(z[:, :: 7])                         # and every 7th is dead for sure
        return {"before": before, "grad": grad, "after": after, "z": z}

    host = arrays.make({"before": (w_shape, dtype), "grad": (w_shape, dtype), "after": (w_shape, dtype),
                        "z": (z_shape, dtype)}, fill)
    grad, before, after, z = host.grad, host.before, host.after, host.z
    flat = [cuda.to_device(a.ravel()) for a in (grad, before, after)]
    norms = cuda.device_array(3)
    d_z, dead = cuda.to_device(z), cuda.device_array(z_shape[1], dtype=np.int32)

    def expected_norms():
        g64, b64, a64 = (a.astype(np.float64) for a in (grad, before, after))
        grad_norm, update_norm, _ = ref.update_ratios([b64], [a64], [g64])
        return {"norms": np.array([grad_norm[0], update_norm[0], np.linalg.norm(b64)])}

    def torch_norms(device):
        import torch
        g_t, b_t, a_t = on_torch(device, grad, before, after)
        return lambda: {"norms": torch.stack([torch.linalg.vector_norm(g_t),
                                              torch.linalg.vector_norm(a_t - b_t),
                                              torch.linalg.vector_norm(b_t)]).double()}

    def torch_dead(device):
        (z_t,) = on_torch(device, z)
        return lambda: {"dead": (z_t <= 0).all(dim=0).int()}

    found = []
    for version, label in ((gc, ""), (gc2, ", v2: 4 a thread, rows in parts")):
        partials = cuda.device_array((version.norm_blocks(grad.size), 3))                  # scratch
        alive = cuda.device_array((version.dead_parts(*z_shape), z_shape[1]), dtype=np.uint8)  # scratch
        found += [
            Case(f"clinic: gradient, update and weight norms, one pass{label} ({w_shape[0]}x{w_shape[1]})",
                 {"grad": flat[0], "before": flat[1], "after": flat[2]}, {"norms": norms},
                 lambda version=version, partials=partials: version.norms_device(*flat, partials, norms),
                 expected_norms, torch_norms),
            Case(f"clinic: dead ReLU units{label} ({z_shape[0]}x{z_shape[1]})", {"z": d_z}, {"dead": dead},
                 lambda version=version, alive=alive: version.dead_units_device(d_z, dead, alive),
                 lambda: {"dead": np.all(z.astype(np.float64) <= 0, axis=0).astype(np.int32)}, torch_dead),
        ]
    return found
