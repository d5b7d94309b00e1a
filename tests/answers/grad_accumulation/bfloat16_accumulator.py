# question: grad_accumulation
# bfloat16 buffers, emulated: every partial sum keeps float32's top 16 bits (8 bits of mantissa),
# as a bfloat16 accumulator would. Named half-precision-accumulator, like float16.
# expect: trap=half-precision-accumulator
import numpy as np


def mlp_loss(params, x, y):
    W1, b1, W2, b2 = params
    diff = np.maximum(x @ W1 + b1, 0.0) @ W2 + b2 - y
    return 0.5 * float(np.sum(diff * diff)) / x.shape[0]


def mlp_grads(params, x, y):
    W1, b1, W2, b2 = params
    z = x @ W1 + b1
    h = np.maximum(z, 0.0)
    dout = (h @ W2 + b2 - y) / x.shape[0]
    dz = (dout @ W2.T) * (z > 0)
    return x.T @ dz, dz.sum(axis=0), h.T @ dout, dout.sum(axis=0)


def accumulated_grads(params, x, y, micro_batch):
    n = x.shape[0]
    total = [np.zeros(p.shape) for p in params]
    for start in range(0, n, micro_batch):
        x_k, y_k = x[start:start + micro_batch], y[start:start + micro_batch]
        for buffer, g in zip(total, mlp_grads(params, x_k, y_k)):
            buffer[...] = bfloat16(buffer + g * (x_k.shape[0] / n))
    return tuple(total)


def bfloat16(values):
    """Round to bfloat16 (to nearest even), kept in a float64 array."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)
