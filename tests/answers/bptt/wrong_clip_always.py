# expect: wrong
# Clipping that always rescales to max_norm, also when the gradients were under it.
def clip_grad_norm(grads, max_norm):
    total = float(np.sqrt(sum(np.sum(g * g) for g in grads)))
    return [g * (max_norm / total) for g in grads], total
