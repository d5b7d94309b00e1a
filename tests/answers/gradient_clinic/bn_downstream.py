# Trap bn-downstream: every layer where the whole batch and its halves differ is named,
# not only the first.
def diagnose(snapshot):
    s = snapshot
    faults = []
    _, update_norms, ratios = update_ratios(s["params_before"], s["params_after"], s["grads"])
    for i, (g, n) in enumerate(zip(s["grads"], s["numeric_grads"])):
        if not np.any(g) and np.any(n):
            faults.append(["detached", i])  # backprop gives nothing, the loss depends on it
        elif relative_error(g, n) > 1e-4:
            faults.append(["stale-activation", i])  # backprop disagrees with the true loss
        elif np.any(g) and update_norms[i] == 0:
            faults.append(["frozen", i])  # a gradient, but no step
    for i, (a, z) in enumerate(zip(s["inputs"], s["pre_acts"])):
        gain = np.sqrt(np.mean(z * z)) / np.sqrt(np.mean(a * a))  # this layer's own scale factor
        if gain > 8:
            faults.append(["exploding-init", i])
        elif gain < 1 / 8:
            faults.append(["vanishing-init", i])
    for i, (whole, halves) in enumerate(zip(s["eval_batch"], s["eval_split"])):
        if relative_error(whole, halves) > 1e-6:
            faults.append(["bn-train-at-eval", i])  # and every later layer too
    moved = update_norms > 0
    if np.any(moved) and np.median(ratios[moved]) > 1 / 32:
        faults.append(["lr-too-large", None])
    return faults
