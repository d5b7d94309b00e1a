# Trap untied-copy: the model keeps the projection's weight as a copy of the embedding, as
# nn.Parameter(embedding.weight.clone()) does: two parameters, each moved by its own use's
# gradient. Forward and backward are right; only training drifts the two apart.
class _UntiedLM:
    def __init__(self, E, W):
        self.embedding = E.copy()
        self.projection = self.embedding.copy()  # starts equal, is a second parameter
        self.W = W.copy()

    def step(self, ids, targets, lr):
        N = len(ids)
        x = self.embedding[ids]
        h = np.tanh(x @ self.W)
        logits = h @ self.projection.T
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        loss = -np.mean(np.log(p[np.arange(N), targets]))
        dlogits = p.copy()
        dlogits[np.arange(N), targets] -= 1.0
        dlogits /= N
        d_projection = dlogits.T @ h
        dz = (dlogits @ self.projection) * (1.0 - h ** 2)
        d_embedding = np.zeros_like(self.embedding)
        np.add.at(d_embedding, ids, dz @ self.W.T)
        self.embedding -= lr * d_embedding
        self.projection -= lr * d_projection
        self.W -= lr * (x.T @ dz)
        return loss


def tied_lm_train(E, W, ids, targets, lr, steps):
    model = _UntiedLM(E, W)
    losses = np.array([model.step(ids, targets, lr) for _ in range(steps)])
    return model.embedding, model.projection, model.W, losses
