# question: adamw_step
# A correct answer written with PyTorch: torch.optim.AdamW's own step, its state set to the
# moments given, and its decay switched off for an exempt tensor as a parameter group does.
import numpy as np
import torch


def _torch_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay, dtype):
    param = torch.nn.Parameter(torch.tensor(p, dtype=dtype))
    param.grad = torch.tensor(g, dtype=dtype)
    opt = torch.optim.AdamW([param], lr=lr, betas=(beta1, beta2), eps=eps,
                            weight_decay=weight_decay if decay else 0.0, foreach=False)
    opt.state[param] = {"step": torch.tensor(float(t - 1)), "exp_avg": torch.tensor(m, dtype=dtype),
                        "exp_avg_sq": torch.tensor(v, dtype=dtype)}
    opt.step()
    state = opt.state[param]
    return param.detach().numpy(), state["exp_avg"].numpy(), state["exp_avg_sq"].numpy()


def adamw_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay):
    return _torch_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay, torch.float64)


def mixed_precision_step(master, grad16, m, v, t, lr, beta1, beta2, eps, weight_decay, decay):
    if not torch.isfinite(torch.from_numpy(grad16)).all():
        return master.copy(), master.astype(np.float16), m.copy(), v.copy(), t
    p, m, v = _torch_step(master, grad16.astype(np.float32), m, v, t + 1, lr, beta1, beta2, eps,
                          weight_decay, decay, torch.float32)
    return p, p.astype(np.float16), m, v, t + 1  # numpy casts: torch's float16 path needs cpuinfo, absent in the sandbox


def training_flops(n_params, n_tokens):
    return 6.0 * n_params * n_tokens


def bytes_per_param(zero_stage, n_gpus):
    return (2.0 / (n_gpus if zero_stage >= 3 else 1) + 2.0 / (n_gpus if zero_stage >= 2 else 1)
            + 12.0 / (n_gpus if zero_stage >= 1 else 1))
