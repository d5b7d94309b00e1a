# Trap frozen-vs-detached: a layer that did not move is called frozen before its
# gradient is read, so a detached layer is named frozen.
def diagnose(snapshot):
    s = snapshot
    faults = []
    _, update_norms, ratios = update_ratios(s["params_before"], s["params_after"], s["grads"])
    for i, (g, n) in enumerate(zip(s["grads"], s["numeric_grads"])):
        if update_norms[i] == 0:
            faults.append(["frozen", i])  # no step: called frozen, whatever the gradient
        elif relative_error(g, n) > 1e-4:
            faults.append(["stale-activation", i])
    for i, (a, z) in enumerate(zip(s["inputs"], s["pre_acts"])):
        gain = np.sqrt(np.mean(z * z)) / np.sqrt(np.mean(a * a))  # this layer's own scale factor
        if gain > 8:
            faults.append(["exploding-init", i])
        elif gain < 1 / 8:
            faults.append(["vanishing-init", i])
    for i, (whole, halves) in enumerate(zip(s["eval_batch"], s["eval_split"])):
        if relative_error(whole, halves) > 1e-6:
            faults.append(["bn-train-at-eval", i])  # the first: later layers inherit it
            break
    moved = update_norms > 0
    if np.any(moved) and np.median(ratios[moved]) > 1 / 32:
        faults.append(["lr-too-large", None])
    return faults
