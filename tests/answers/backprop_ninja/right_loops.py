# question: backprop_ninja
# expect: full
# A right answer in plain loops, one example and one unit at a time (no matrix products,
# no fancy indexing): slow, but every index is spelled out.
import math

import numpy as np


def ninja_forward(params, idx, targets, keep_bits, p_drop, eps):
    E, W1, b1, gamma, beta, W2, b2 = (params[k] for k in ("E", "W1", "b1", "gamma", "beta", "W2", "b2"))
    B, T = idx.shape
    V, C = E.shape
    H = W1.shape[1]
    bits = np.unpackbits(keep_bits, count=B * H)
    c = {k: np.zeros(s) for k, s in (("emb", (B, T, C)), ("x", (B, T * C)), ("hpre", (B, H)), ("mean", B),
                                     ("rstd", B), ("xhat", (B, H)), ("hln", (B, H)), ("h", (B, H)),
                                     ("hdrop", (B, H)), ("z", (B, C)), ("logits", (B, V)))}
    loss = 0.0
    for b in range(B):
        for t in range(T):
            for k in range(C):
                c["emb"][b, t, k] = E[idx[b, t], k]
                c["x"][b, t * C + k] = E[idx[b, t], k]
        for j in range(H):
            c["hpre"][b, j] = b1[j] + sum(c["x"][b, i] * W1[i, j] for i in range(T * C))
        mean = sum(c["hpre"][b]) / H
        var = sum((c["hpre"][b, j] - mean) ** 2 for j in range(H)) / H
        c["mean"][b], c["rstd"][b] = mean, 1.0 / math.sqrt(var + eps)
        for j in range(H):
            c["xhat"][b, j] = (c["hpre"][b, j] - mean) * c["rstd"][b]
            c["hln"][b, j] = gamma[j] * c["xhat"][b, j] + beta[j]
            c["h"][b, j] = math.tanh(c["hln"][b, j])
            c["hdrop"][b, j] = c["h"][b, j] / (1.0 - p_drop) if bits[b * H + j] else 0.0
        for k in range(C):
            c["z"][b, k] = b2[k] + sum(c["hdrop"][b, j] * W2[j, k] for j in range(H))
        for v in range(V):
            c["logits"][b, v] = sum(c["z"][b, k] * E[v, k] for k in range(C))
        top = max(c["logits"][b])
        lse = top + math.log(sum(math.exp(l - top) for l in c["logits"][b]))
        loss += (lse - c["logits"][b, targets[b]]) / B
    return loss, c


def ninja_backward(params, cache, idx, targets, keep_bits, p_drop):
    E, W1, gamma, W2 = params["E"], params["W1"], params["gamma"], params["W2"]
    B, T = idx.shape
    V, C = E.shape
    H = W1.shape[1]
    bits = np.unpackbits(keep_bits, count=B * H)
    shapes = {"dlogits": (B, V), "dz": (B, C), "dW2": (H, C), "db2": C, "dhdrop": (B, H), "dh": (B, H),
              "dhln": (B, H), "dgamma": H, "dbeta": H, "dhpre": (B, H), "dW1": (T * C, H), "db1": H,
              "dx": (B, T * C), "demb": (B, T, C), "dE": (V, C)}
    g = {k: np.zeros(s) for k, s in shapes.items()}
    for b in range(B):
        row = cache["logits"][b]
        top = max(row)
        total = sum(math.exp(l - top) for l in row)
        for v in range(V):
            g["dlogits"][b, v] = (math.exp(row[v] - top) / total - (v == targets[b])) / B
            for k in range(C):
                g["dz"][b, k] += g["dlogits"][b, v] * E[v, k]
                g["dE"][v, k] += g["dlogits"][b, v] * cache["z"][b, k]  # the output layer's use of E
        for k in range(C):
            g["db2"][k] += g["dz"][b, k]
            for j in range(H):
                g["dW2"][j, k] += cache["hdrop"][b, j] * g["dz"][b, k]
                g["dhdrop"][b, j] += g["dz"][b, k] * W2[j, k]
        for j in range(H):
            g["dh"][b, j] = g["dhdrop"][b, j] / (1.0 - p_drop) if bits[b * H + j] else 0.0
            g["dhln"][b, j] = g["dh"][b, j] * (1.0 - cache["h"][b, j] ** 2)
            g["dgamma"][j] += g["dhln"][b, j] * cache["xhat"][b, j]
            g["dbeta"][j] += g["dhln"][b, j]
        gs = [g["dhln"][b, j] * gamma[j] for j in range(H)]
        mean_g = sum(gs) / H
        mean_gx = sum(gs[j] * cache["xhat"][b, j] for j in range(H)) / H
        for j in range(H):
            g["dhpre"][b, j] = cache["rstd"][b] * (gs[j] - mean_g - cache["xhat"][b, j] * mean_gx)
            g["db1"][j] += g["dhpre"][b, j]
            for i in range(T * C):
                g["dW1"][i, j] += cache["x"][b, i] * g["dhpre"][b, j]
                g["dx"][b, i] += g["dhpre"][b, j] * W1[i, j]
        for t in range(T):
            for k in range(C):
                g["demb"][b, t, k] = g["dx"][b, t * C + k]
                g["dE"][idx[b, t], k] += g["demb"][b, t, k]  # one position at a time: repeats add up
    return g
