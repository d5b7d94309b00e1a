# question: backprop_ninja
# A right answer written with PyTorch's autograd: every intermediate keeps its .grad
# (retain_grad), and the backward replays the forward from the cache's inputs.
import numpy as np
import torch
import torch.nn.functional as F

def _step(params, idx, targets, keep_bits, p_drop, eps):
    """The forward in torch, float64; returns (loss, tensors by name, parameters)."""
    p = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    B, T = idx.shape
    H = params["W1"].shape[1]
    keep = torch.from_numpy(np.unpackbits(keep_bits, count=B * H).reshape(B, H).astype(np.float64))
    t = {"emb": F.embedding(torch.from_numpy(idx), p["E"])}
    t["x"] = t["emb"].reshape(B, -1)
    t["hpre"] = F.linear(t["x"], p["W1"].T, p["b1"])
    t["hln"] = F.layer_norm(t["hpre"], (H,), p["gamma"], p["beta"], eps)
    t["h"] = torch.tanh(t["hln"])
    t["hdrop"] = t["h"] * keep / (1 - p_drop)
    t["z"] = t["hdrop"] @ p["W2"] + p["b2"]
    t["logits"] = t["z"] @ p["E"].T
    loss = F.cross_entropy(t["logits"], torch.from_numpy(targets))
    return loss, t, p


def ninja_forward(params, idx, targets, keep_bits, p_drop, eps):
    loss, t, _ = _step(params, idx, targets, keep_bits, p_drop, eps)
    mean, rstd = torch.ops.aten.native_layer_norm(t["hpre"], [t["hpre"].shape[1]], None, None, eps)[1:]
    cache = {k: v.detach().numpy() for k, v in t.items()}
    cache["mean"], cache["rstd"] = mean.detach().reshape(-1).numpy(), rstd.detach().reshape(-1).numpy()
    cache["xhat"] = (cache["hpre"] - cache["mean"][:, None]) * cache["rstd"][:, None]
    return loss.item(), cache


def ninja_backward(params, cache, idx, targets, keep_bits, p_drop):
    # eps is not an argument: recover it from the cache (rstd = 1 / sqrt(var + eps))
    eps = float(np.mean(1 / cache["rstd"] ** 2 - cache["hpre"].var(axis=1)))
    loss, t, p = _step(params, idx, targets, keep_bits, p_drop, max(eps, 0.0))
    for v in t.values():
        v.retain_grad()
    loss.backward()
    grads = {"d" + k: v.grad.numpy() for k, v in t.items()}  # the intermediates
    grads.update({"d" + k: v.grad.numpy() for k, v in p.items()})  # the parameters
    return grads
