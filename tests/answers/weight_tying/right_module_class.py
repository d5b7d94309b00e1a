# question: weight_tying
# expect: full
# A right answer organised as modules, the way a framework does it: an Embedding and a
# Projection that hold one shared Parameter object, each adding its gradient into the
# parameter's .grad; the optimizer steps each distinct parameter once, in place. The lookup's
# backward builds S^T dx with a one-hot matrix instead of np.add.at.
import numpy as np


class Parameter:
    def __init__(self, data):
        self.data, self.grad = data, np.zeros_like(data)


class Embedding:
    def __init__(self, weight):
        self.weight = weight

    def forward(self, ids):
        self.ids = ids
        return self.weight.data[ids]

    def backward(self, dx):
        onehot = np.eye(self.weight.data.shape[0])[self.ids]  # N, V
        self.weight.grad += onehot.T @ dx


class Projection:
    def __init__(self, weight):
        self.weight = weight

    def forward(self, h):
        self.h = h
        return h @ self.weight.data.T

    def backward(self, dlogits):
        self.weight.grad += dlogits.T @ self.h
        return dlogits @ self.weight.data


class TiedLM:
    def __init__(self, E, W):
        self.E, self.W = Parameter(E.copy()), Parameter(W.copy())
        self.embed, self.project = Embedding(self.E), Projection(self.E)  # one Parameter, two uses

    def parameters(self):
        unique = []
        for p in (self.embed.weight, self.project.weight, self.W):
            if all(p is not q for q in unique):
                unique.append(p)
        return unique

    def loss(self, ids, targets):
        self.x = self.embed.forward(ids)
        self.h = np.tanh(self.x @ self.W.data)
        logits = self.project.forward(self.h)
        z = logits - logits.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        self.p, self.targets = np.exp(logp), targets
        return float(-logp[np.arange(len(ids)), targets].mean())

    def backward(self):
        N = len(self.targets)
        dlogits = self.p.copy()
        dlogits[np.arange(N), self.targets] -= 1.0
        dlogits /= N
        dz = self.project.backward(dlogits) * (1.0 - self.h ** 2)
        self.W.grad += self.x.T @ dz
        self.embed.backward(dz @ self.W.data.T)


def _model(E, W):
    return TiedLM(E, W)


def tied_lm_forward(E, W, ids, targets):
    model = _model(E, W)
    loss = model.loss(ids, targets)
    return loss, {"x": model.x, "h": model.h, "p": model.p}


def tied_lm_backward(E, W, cache, ids, targets):
    model = _model(E, W)
    model.embed.ids, model.project.h = ids, cache["h"]
    model.x, model.h, model.p, model.targets = cache["x"], cache["h"], cache["p"], targets
    model.backward()
    return model.E.grad, model.W.grad


def tied_lm_train(E, W, ids, targets, lr, steps):
    model = _model(E, W)
    losses = []
    for _ in range(steps):
        for p in model.parameters():
            p.grad = np.zeros_like(p.data)
        losses.append(model.loss(ids, targets))
        model.backward()
        for p in model.parameters():
            p.data -= lr * p.grad
    return model.embed.weight.data, model.project.weight.data, model.W.data, np.array(losses)
