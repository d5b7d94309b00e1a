# Trap clip-per-tensor: every gradient clipped by its own norm.
def clip_grad_norm(grads, max_norm):
    total_norm = float(np.sqrt(sum(np.sum(g ** 2) for g in grads)))
    clipped = []
    for g in grads:
        norm = np.linalg.norm(g)
        clipped.append(g * (max_norm / norm) if norm > max_norm else g.copy())
    return clipped, total_norm
