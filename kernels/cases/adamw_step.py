"""Cases for kernels/adamw_step.py and kernels/adamw_step_v2.py: one ``Case`` a version, the fused AdamW update, which reads the
gradient and the state (master weights, m, v) once and writes the state and a 16-bit copy of
the weights once, after the overflow check (per-block flags over the gradients, which the
host reads to decide whether the update runs; both launches are timed). Trainers run the
update in place; here it writes new arrays, so that every timed launch takes the same step
from the same state (the bytes moved are the same). TINY is two blocks; LARGE is a
64M-parameter tensor (a transformer block's weights), 256 MB per fp32 state array; HUGE
fills an 80 GB GPU. PyTorch's counterpart is ``torch._fused_adamw_``, the kernel behind
``AdamW(fused=True)``. P is the number of parameters. Version 1 (one thread a parameter) and
version 2 (4 a thread in 128-bit loads) write the same output arrays, each its own flags.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, solution

TINY, LARGE = 300, 1 << 26  # P
HUGE = (2_600_000_000,)
T, LR, BETAS, EPS, WEIGHT_DECAY = 3, 1e-3, (0.9, 0.999), 1e-8, 0.01


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import adamw_step as ad, adamw_step_v2 as ad2
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("adamw_step")
    P = shape
    host = arrays.make({name: (P, dtype) for name in "pgmv"},
                       lambda rng: {"p": rng.standard_normal(P).astype(dtype),
                                    "g": (0.1 * rng.standard_normal(P)).astype(dtype),
                                    "m": (0.01 * rng.standard_normal(P)).astype(dtype),
                                    "v": (0.001 * rng.random(P) + 1e-4).astype(dtype)})
    p, g, m, v = host.p, host.g, host.m, host.v
    d_p, d_g, d_m, d_v = (cuda.to_device(a) for a in (p, g, m, v))
    d_16 = cuda.device_array(P, dtype=np.float16)
    p_out, m_out, v_out = (cuda.device_array(P, dtype=dtype) for _ in range(3))
    scalars = ad._scalars(np.dtype(dtype), T, LR, *BETAS, EPS, WEIGHT_DECAY, True)

    def step(version):  # the check, then the update: what a trainer's step launches
        flags = cuda.device_array(version.flag_blocks(P), dtype=np.int32)

        def launch():
            version.nonfinite_flags_device(d_g, flags)
            version.adamw_update_device(d_p, d_g, d_m, d_v, scalars, p_out, m_out, v_out, d_16)
        return launch, flags

    def expected():
        new = ref.adamw_step(*(a.astype(np.float64) for a in (p, g, m, v)), T, LR, *BETAS, EPS,
                             WEIGHT_DECAY, True)
        return dict(zip(("p", "m", "v"), new))

    def torch_adamw(device):
        import torch
        tensors = on_torch(device, p, g, m, v)

        def run():
            p_t, g_t, m_t, v_t = (t.clone() for t in tensors)
            step = torch.tensor(float(T), dtype=p_t.dtype, device=p_t.device)
            torch._fused_adamw_([p_t], [g_t], [m_t], [v_t], [], [step], lr=LR, beta1=BETAS[0],
                                beta2=BETAS[1], weight_decay=WEIGHT_DECAY, eps=EPS,
                                amsgrad=False, maximize=False)
            return {"p": p_t, "m": m_t, "v": v_t}
        return run

    found = []
    for version, label in ((ad, ""), (ad2, ", v2: 4 a thread, 128-bit loads")):
        launch, flags = step(version)
        found.append(Case(f"AdamW overflow check + fused update, master + 16-bit copy{label} (P={P})",
                          {"g": d_g, "p": d_p, "m": d_m, "v": d_v},
                          {"p": p_out, "m": m_out, "v": v_out, "weight16": d_16, "flags": flags}, launch,
                          expected, torch_adamw))
    return found
