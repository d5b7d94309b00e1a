# expect: unnamed
# says: uses the whole budget
# The knapsack right but for one comparison: kept sizes must stay strictly under the budget,
# so a plan that fills it exactly is never found.
_plan = checkpoint_plan


def checkpoint_plan(sizes, costs, budget):
    return _plan(sizes, costs, max(budget - 1, 0))
