# question: training_symptoms
# expect: full
# A right answer written as a reader scans a run: step by step with plain loops, its own
# thresholds (a first loss 2.5 times ln C is an init too large; a NaN after step 20 is late; a jump of 3 deviations; fewer than 1 rise in 10).
import math

import numpy as np


def diagnose(trace):
    loss, norms, depth = list(trace["loss"]), trace["grad_norms"], list(trace["depth"])
    if math.isfinite(loss[0]) and loss[0] > 2.5 * math.log(trace["num_classes"]):
        return "init-scale"  # far above what an untrained classifier scores
    first_bad = next((t for t, v in enumerate(loss) if not math.isfinite(v)), None)
    if first_bad is not None:
        if first_bad > 20:
            return "fp16-overflow"
        step0_ok = all(math.isfinite(v) and v < 50 for v in norms[0])
        if first_bad == 0 and step0_ok:
            return "log-zero"
        return "init-scale"
    for t in range(1, len(depth)):
        if depth[t] != depth[t - 1]:
            window = loss[max(0, t - 20):t]
            mean = sum(window) / len(window)
            spread = math.sqrt(sum((v - mean) ** 2 for v in window) / len(window))
            if loss[t] - mean > max(0.5, 3 * spread):
                return "block-not-identity"
    rises = sum(1 for a, b in zip(loss[:100], loss[1:100]) if b > a)
    if rises < 10:
        return "repeated-batch"
    val = list(trace["val_loss"])
    if min(val[len(val) // 2:]) >= val[0]:
        return "bn-train-mode"
    return "healthy"


def gated_block_forward(h, W1, W2, gain):
    N, D = h.shape
    out = h.copy()
    hidden = np.maximum(h @ W1, 0.0)
    for n in range(N):
        for j in range(D):
            out[n, j] += gain[j] * float(hidden[n] @ W2[:, j])
    return out


def gated_block_backward(dout, h, W1, W2, gain):
    N, D = h.shape
    H = W1.shape[1]
    z = h @ W1
    a = np.maximum(z, 0.0)
    dgain = np.zeros(D)
    dW1, dW2, dh = np.zeros(W1.shape), np.zeros(W2.shape), dout.copy()
    for n in range(N):
        branch = dout[n] * gain                    # what reaches F's output, row n
        f = a[n] @ W2
        dgain += dout[n] * f
        dz = np.zeros(H)
        for k in range(H):
            if z[n, k] > 0:
                dz[k] = float(branch @ W2[k])
            dW2[k] += a[n, k] * branch
        dW1 += np.outer(h[n], dz)
        dh[n] += W1 @ dz
    return dh, dW1, dW2, dgain
