# Trap ratio-of-gradient: the ratio divides the gradient's norm by the weight's, not the update's.
def update_ratios(params_before, params_after, grads):
    grad_norms = np.array([np.linalg.norm(g) for g in grads])
    update_norms = np.array([np.linalg.norm(a - b) for a, b in zip(params_after, params_before)])
    weight_norms = np.array([np.linalg.norm(w) for w in params_before])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(grad_norms > 0, grad_norms / weight_norms, 0.0)
    return grad_norms, update_norms, ratios
