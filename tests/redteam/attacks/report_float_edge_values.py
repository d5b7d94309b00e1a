# question: ddp_accumulation
# base: solution
# Class 10: values at float64's edge (1e308) in every answer and through the grader's all_reduce:
# the grader's own arithmetic on them (a sum, a least-squares fit, a factor) overflows, and its
# RuntimeWarnings, with the grader's file paths, printed above the report.
_huge_grads = linear_grads


def linear_grads(params, x, y):
    return tuple(np.full(g.shape, 1e308) for g in _huge_grads(params, x, y))


def ddp_grads(params, xs, ys, micro_batch):
    W, b = params
    summed = all_reduce([np.full(W.size + b.size, 1e308) for _ in xs])
    return [(np.full(W.shape, 1e308), np.full(b.shape, -1e308)) for _ in summed]
