# question: moe_router_backward
# A correct answer written with PyTorch: torch.topk for the selection (ties broken by a stable
# sort, which topk does not promise), autograd for the backward, f detached.
import numpy as np
import torch


def _select(logits, k):
    return torch.sort(-logits, dim=1, stable=True).indices[:, :k]


def _loss_parts(x, Wr, idx, aux_coef):
    logits = x @ Wr
    N, E = logits.shape
    k = idx.shape[1]
    gates = torch.softmax(torch.gather(logits, 1, idx), dim=1)
    f = torch.bincount(idx.reshape(-1), minlength=E).to(logits.dtype) / (N * k)
    aux = aux_coef * E * torch.sum(f.detach() * torch.softmax(logits, dim=1).mean(dim=0))
    return gates, aux


def router_forward(x, Wr, k, aux_coef):
    with torch.no_grad():
        xt, Wt = torch.from_numpy(x), torch.from_numpy(Wr)
        idx = _select(xt @ Wt, k)
        gates, aux = _loss_parts(xt, Wt, idx, aux_coef)
    return gates.numpy(), idx.numpy().astype(np.int64), float(aux)


def router_backward(dgates, x, Wr, idx, aux_coef):
    xt = torch.tensor(x, requires_grad=True)
    Wt = torch.tensor(Wr, requires_grad=True)
    gates, aux = _loss_parts(xt, Wt, torch.from_numpy(np.asarray(idx, dtype=np.int64)), aux_coef)
    (torch.sum(torch.from_numpy(dgates) * gates) + aux).backward()
    return xt.grad.numpy(), Wt.grad.numpy()
