# expect: wrong
# says: not a mask
# The right plan, returned as 0/1 integers: the contract's keep is a bool mask, and as an index
# an int array picks elements by position (sizes[keep] reads ops 0 and 1, not the kept ones).
def checkpoint_plan(sizes, costs, budget):
    L, B = len(sizes), int(budget)
    best = np.zeros((L + 1, B + 1))
    for i in range(1, L + 1):
        for m in range(B + 1):
            best[i, m] = best[i - 1, m]
            if sizes[i - 1] <= m:
                best[i, m] = max(best[i, m], best[i - 1, m - sizes[i - 1]] + costs[i - 1])
    keep, m = np.zeros(L, dtype=np.int64), B
    for i in range(L, 0, -1):
        if best[i, m] != best[i - 1, m]:
            keep[i - 1], m = 1, m - sizes[i - 1]
    return keep
