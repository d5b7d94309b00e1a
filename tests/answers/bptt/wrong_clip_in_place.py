# expect: wrong
# Clipping in place, as torch's clip_grad_norm_ does to .grad: right values, changed inputs.
def clip_grad_norm(grads, max_norm):
    total = float(np.sqrt(sum(np.sum(g * g) for g in grads)))
    if total > max_norm:
        for g in grads:
            g *= max_norm / total
    return grads, total
