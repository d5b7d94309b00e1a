# question: vram_trap
# expect: full
# Layer objects (numpy-ml / nnfs style) with forward and backward; a Checkpointed runner
# keeps only segment inputs and rebuilds each segment's layer caches when it needs them.
import numpy as np


def relu_forward_packed(z):
    return np.where(z > 0, z, 0.0), np.packbits(z.reshape(-1) > 0)


def relu_backward_packed(da, mask, shape):
    bits = np.unpackbits(mask, count=int(np.prod(shape))).astype(bool).reshape(shape)
    return np.where(bits, da, 0.0)


class Dense:
    def __init__(self, W, b, relu):
        self.W, self.b, self.relu = W, b, relu
        self.cache = None

    def forward(self, h, keep=False):
        z = h @ self.W + self.b
        if self.relu:
            out, mask = relu_forward_packed(z)
        else:
            out, mask = z, None
        if keep:
            self.cache = (h, mask)
        return out

    def backward(self, dout):
        h, mask = self.cache
        self.cache = None
        dz = dout if mask is None else relu_backward_packed(dout, mask, dout.shape)
        return dz @ self.W.T, (h.T @ dz, dz.sum(axis=0))


class Checkpointed:
    def __init__(self, layers, segment_size):
        self.layers, self.s = layers, segment_size

    def loss_and_grads(self, x, y):
        N, L = x.shape[0], len(self.layers)
        checkpoints = []
        h = x
        for i, layer in enumerate(self.layers):
            if i % self.s == 0:
                checkpoints.append(h)
            h = layer.forward(h)
        loss = 0.5 * float(np.sum((h - y) ** 2)) / N
        dh = (h - y) / N
        del h
        grads = [None] * L
        for seg in reversed(range(len(checkpoints))):
            start, stop = seg * self.s, min(seg * self.s + self.s, L)
            h = checkpoints.pop()
            for i in range(start, stop):
                h = self.layers[i].forward(h, keep=True)
            del h
            for i in reversed(range(start, stop)):
                dh, grads[i] = self.layers[i].backward(dh)
        return loss, grads


def mlp_loss_and_grads(params, x, y, segment_size):
    layers = [Dense(W, b, relu=i < len(params) - 1) for i, (W, b) in enumerate(params)]
    return Checkpointed(layers, segment_size).loss_and_grads(x, y)
