# question: gradient_clinic
# A right answer written with PyTorch: torch.linalg norms, torch.testing-style relative errors,
# the dead units with torch.all, and the same rules in diagnose.
import math

import torch


def _t(a):
    return torch.as_tensor(a, dtype=torch.float64)


def update_ratios(params_before, params_after, grads):
    grad_norms = torch.stack([torch.linalg.norm(_t(g)) for g in grads])
    update_norms = torch.stack([torch.linalg.norm(_t(a) - _t(b)) for a, b in zip(params_after, params_before)])
    weight_norms = torch.stack([torch.linalg.norm(_t(w)) for w in params_before])
    ratios = torch.where(update_norms > 0, update_norms / weight_norms, torch.zeros_like(update_norms))
    return grad_norms.numpy(), update_norms.numpy(), ratios.numpy()


def dead_relu_fraction(pre_acts):
    return torch.stack([torch.all(_t(z) <= 0, dim=0).double().mean() for z in pre_acts]).numpy()


def relative_error(analytic, numeric):
    a, n = _t(analytic), _t(numeric)
    scale = torch.maximum(torch.linalg.norm(a), torch.linalg.norm(n))
    return 0.0 if scale == 0 else (torch.linalg.norm(a - n) / scale).item()


def diagnose(snapshot):
    faults = []
    _, update_norms, ratios = (torch.from_numpy(v) for v in update_ratios(
        snapshot["params_before"], snapshot["params_after"], snapshot["grads"]))
    for i, (g, n) in enumerate(zip(snapshot["grads"], snapshot["numeric_grads"])):
        g, n = _t(g), _t(n)
        if not g.any() and n.any():
            faults.append(["detached", i])
        elif relative_error(g, n) > 1e-4:
            faults.append(["stale-activation", i])
        elif g.any() and update_norms[i] == 0:
            faults.append(["frozen", i])
    for i, (a, z) in enumerate(zip(snapshot["inputs"], snapshot["pre_acts"])):
        gain = (_t(z).square().mean().sqrt() / _t(a).square().mean().sqrt()).item()
        if gain > 8:
            faults.append(["exploding-init", i])
        elif gain < 1 / 8:
            faults.append(["vanishing-init", i])
    for i, (whole, halves) in enumerate(zip(snapshot["eval_batch"], snapshot["eval_split"])):
        if relative_error(whole, halves) > 1e-6:
            faults.append(["bn-train-at-eval", i])
            break
    moved = ratios[update_norms > 0]
    if len(moved) and torch.quantile(moved, 0.5).item() > 1 / 32:  # the median, halfway for even counts
        faults.append(["lr-too-large", None])
    return faults
