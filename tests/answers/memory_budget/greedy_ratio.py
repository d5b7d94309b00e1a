# Trap greedy-ratio: keep the ops with the most recompute per unit of memory first, while they
# fit: the greedy answer to a 0/1 knapsack, not the best one.
def checkpoint_plan(sizes, costs, budget):
    keep, used = np.zeros(len(sizes), dtype=bool), 0
    for i in np.argsort(-(costs / sizes), kind="stable"):
        if used + sizes[i] <= budget:
            keep[i] = True
            used += sizes[i]
    return keep
