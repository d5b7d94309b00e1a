# Trap over-budget: the budget is checked before an op is added, not after, so the last op
# kept can overshoot it.
def checkpoint_plan(sizes, costs, budget):
    keep, used = np.zeros(len(sizes), dtype=bool), 0
    for i in np.argsort(-costs, kind="stable"):
        if used < budget:
            keep[i] = True
            used += sizes[i]
    return keep
