# question: attention_backward
# expect: full
# Flash-style: key tiles with an online softmax in the forward, (query tile x key tile) blocks
# in the backward; einsum for every product.
import numpy as np

TQ, TK = 32, 48


def attention_forward(q, k, v, causal):
    B, N, d = q.shape
    c = d ** -0.5
    o = np.empty_like(q)
    lse = np.empty((B, N))
    for a in range(0, N, TQ):
        qi = q[:, a:a + TQ]
        rows = np.arange(a, min(a + TQ, N))
        m = np.full((B, len(rows)), -np.inf)
        l = np.zeros((B, len(rows)))
        acc = np.zeros((B, len(rows), d))
        for s0 in range(0, N, TK):
            if causal and s0 > rows[-1]:
                break
            cols = np.arange(s0, min(s0 + TK, N))
            s = np.einsum("bid,bjd->bij", qi, k[:, s0:s0 + TK]) * c
            if causal:
                s = np.where(cols[None, None, :] > rows[None, :, None], -np.inf, s)
            m_new = np.maximum(m, s.max(-1))
            alpha = np.exp(m - m_new)
            p = np.exp(s - m_new[..., None])
            l = l * alpha + p.sum(-1)
            acc = acc * alpha[..., None] + np.einsum("bij,bjd->bid", p, v[:, s0:s0 + TK])
            m = m_new
        o[:, a:a + TQ] = acc / l[..., None]
        lse[:, a:a + TQ] = m + np.log(l)
    return o, lse


def attention_backward(do, q, k, v, o, lse, causal):
    B, N, d = q.shape
    c = d ** -0.5
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
    D = (do * o).sum(-1)
    for a in range(0, N, TQ):
        rows = np.arange(a, min(a + TQ, N))
        for s0 in range(0, N, TK):
            if causal and s0 > rows[-1]:
                break
            cols = np.arange(s0, min(s0 + TK, N))
            s = np.einsum("bid,bjd->bij", q[:, a:a + TQ], k[:, s0:s0 + TK]) * c
            p = np.exp(s - lse[:, a:a + TQ, None])
            if causal:
                p = np.where(cols[None, None, :] > rows[None, :, None], 0.0, p)
            dv[:, s0:s0 + TK] += np.einsum("bij,bid->bjd", p, do[:, a:a + TQ])
            dp = np.einsum("bid,bjd->bij", do[:, a:a + TQ], v[:, s0:s0 + TK])
            ds = p * (dp - D[:, a:a + TQ, None])
            dq[:, a:a + TQ] += c * np.einsum("bij,bjd->bid", ds, k[:, s0:s0 + TK])
            dk[:, s0:s0 + TK] += c * np.einsum("bij,bid->bjd", ds, q[:, a:a + TQ])
    return dq, dk, dv
