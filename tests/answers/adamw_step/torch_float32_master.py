# question: adamw_step
# A correct answer written with PyTorch as one would outside the grader: torch.optim.AdamW on
# float32 tensors for the master copy, and torch's own cast to float16 for weight16 (issue 35:
# both need torch's cpuinfo, which read /proc/cpuinfo and /sys/devices/system/cpu; the
# sandbox gives them read-only). It must get full marks.
import numpy as np
import torch


def _torch_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay, dtype):
    param = torch.nn.Parameter(torch.tensor(p, dtype=dtype))
    param.grad = torch.tensor(g, dtype=dtype)
    opt = torch.optim.AdamW([param], lr=lr, betas=(beta1, beta2), eps=eps,
                            weight_decay=weight_decay if decay else 0.0)
    opt.state[param] = {"step": torch.tensor(float(t - 1)), "exp_avg": torch.tensor(m, dtype=dtype),
                        "exp_avg_sq": torch.tensor(v, dtype=dtype)}
    opt.step()
    state = opt.state[param]
    return param.detach().numpy(), state["exp_avg"].numpy(), state["exp_avg_sq"].numpy()


def adamw_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay):
    return _torch_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay, torch.float64)


def mixed_precision_step(master, grad16, m, v, t, lr, beta1, beta2, eps, weight_decay, decay):
    if not torch.isfinite(torch.from_numpy(grad16)).all():
        return master.copy(), torch.from_numpy(master).half().numpy(), m.copy(), v.copy(), t
    p, m, v = _torch_step(master, grad16.astype(np.float32), m, v, t + 1, lr, beta1, beta2, eps,
                          weight_decay, decay, torch.float32)
    return p, torch.from_numpy(p).to(torch.float16).numpy(), m, v, t + 1


def training_flops(n_params, n_tokens):
    return 6.0 * n_params * n_tokens


def bytes_per_param(zero_stage, n_gpus):
    return (2.0 / (n_gpus if zero_stage >= 3 else 1) + 2.0 / (n_gpus if zero_stage >= 2 else 1)
            + 12.0 / (n_gpus if zero_stage >= 1 else 1))
