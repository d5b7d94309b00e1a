# question: moe_router_backward
# expect: full
# A right answer that masks the unselected logits with -inf and takes a dense softmax over all
# E columns: the masked softmax is the renormalised one, and its dense Jacobian is zero on the
# masked columns. The balancing loss as HF Mixtral writes it, divided by k.
import numpy as np


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _routing(x, Wr, k):
    logits = x @ Wr
    order = np.lexsort((np.arange(logits.shape[1])[None, :].repeat(len(logits), 0), -logits), axis=1)
    idx = order[:, :k].astype(np.int64)
    masked = np.full_like(logits, -np.inf)
    np.put_along_axis(masked, idx, np.take_along_axis(logits, idx, 1), 1)
    return logits, idx, _softmax(masked)  # dense (N, E), zeros off the top k


def router_forward(x, Wr, k, aux_coef):
    logits, idx, dense = _routing(x, Wr, k)
    N, E = logits.shape
    one_hot = np.eye(E)[idx]  # N, k, E
    tokens_per_expert = one_hot.mean(axis=0)  # k, E
    prob_per_expert = _softmax(logits).mean(axis=0)  # E
    aux = aux_coef * E * np.sum(tokens_per_expert * prob_per_expert[None]) / k
    return np.take_along_axis(dense, idx, 1), idx, aux


def router_backward(dgates, x, Wr, idx, aux_coef):
    logits = x @ Wr
    N, E = logits.shape
    k = idx.shape[1]
    masked = np.full_like(logits, -np.inf)
    np.put_along_axis(masked, idx, np.take_along_axis(logits, idx, 1), 1)
    q = _softmax(masked)
    dq = np.zeros((N, E))
    np.put_along_axis(dq, idx, dgates, 1)
    jac = np.einsum("ne,ef->nef", q, np.eye(E)) - np.einsum("ne,nf->nef", q, q)  # N, E, E
    dlogits = np.einsum("nef,ne->nf", jac, dq)
    p = _softmax(logits)
    f = np.eye(E)[idx].sum(axis=(0, 1)) / (N * k)
    dP = aux_coef * E * f / N
    dlogits += np.einsum("ne,ef->nef", p, np.eye(E)) @ dP - p * (p @ dP)[:, None]
    return dlogits @ Wr.T, x.T @ dlogits
