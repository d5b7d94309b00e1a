# question: grad_accumulation
# A correct answer written with PyTorch (CPU, float64): the test-only oracle must get full marks.
# accumulated_grads is PyTorch's own recipe done right: fresh leaf tensors per call (so .grad
# starts empty), and for each micro-batch its summed loss divided by N, the whole batch's row
# count, then backward(), which adds into .grad in place.
import torch


def _leaves(params):
    return [torch.tensor(p, requires_grad=True) for p in params]


def _loss_sum(leaves, x, y):
    W1, b1, W2, b2 = leaves
    out = torch.relu(torch.from_numpy(x) @ W1 + b1) @ W2 + b2
    return 0.5 * torch.nn.functional.mse_loss(out, torch.from_numpy(y), reduction="sum")


def mlp_loss(params, x, y):
    with torch.no_grad():
        return (_loss_sum([torch.from_numpy(p) for p in params], x, y) / x.shape[0]).item()


def mlp_grads(params, x, y):
    leaves = _leaves(params)
    (_loss_sum(leaves, x, y) / x.shape[0]).backward()
    return tuple(p.grad.numpy() for p in leaves)


def accumulated_grads(params, x, y, micro_batch):
    leaves = _leaves(params)
    n = x.shape[0]
    for start in range(0, n, micro_batch):
        loss = _loss_sum(leaves, x[start:start + micro_batch], y[start:start + micro_batch]) / n
        loss.backward()  # adds this micro-batch's share into every .grad
    return tuple(p.grad.numpy() for p in leaves)


def minibatch_noise(params, x, y, B):
    # per-row gradients with torch.func (vmap over rows); torch.var's default is Bessel's N - 1,
    # so the population variance asks for correction=0
    from torch.func import grad, vmap
    leaves = [torch.from_numpy(p) for p in params]

    def row_loss(ps, xi, yi):
        W1, b1, W2, b2 = ps
        out = torch.relu(xi[None] @ W1 + b1) @ W2 + b2
        return 0.5 * torch.sum((out - yi[None]) ** 2)
    per_row = vmap(grad(row_loss), in_dims=(None, 0, 0))(leaves, torch.from_numpy(x), torch.from_numpy(y))
    return tuple((g.var(dim=0, correction=0) / B).numpy() for g in per_row)
