# dV as P dO instead of P^T dO, with the causal mask right (issue 24, class 4): later keys get a
# gradient, but not the one an unmasked backward gives, so it is not a causal leak.
# expect: wrong
# not named: causal-leak
_right_backward = attention_backward


def attention_backward(do, q, k, v, o, lse, causal):
    dq, dk, _ = _right_backward(do, q, k, v, o, lse, causal)
    d = q.shape[-1]
    s = q @ np.swapaxes(k, 1, 2) / np.sqrt(d)                  # B, N, N
    if causal:
        s = np.where(np.triu(np.ones(s.shape[1:], dtype=bool), 1), -np.inf, s)
    p = np.exp(s - lse[:, :, None])                            # B, N, N
    return dq, dk, p @ do                                      # P dO: the transpose forgotten
