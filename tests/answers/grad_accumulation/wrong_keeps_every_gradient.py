# Every micro-batch's gradient kept in a list and summed at the end: the numbers are right,
# but the peak grows with the number of micro-batches (issue 24, class 3: named by how the
# peak grows, though it never reaches a whole-batch activation).
# expect: trap=full-batch-at-once
def accumulated_grads(params, x, y, micro_batch):
    n = x.shape[0]
    kept = []
    for start in range(0, n, micro_batch):
        x_k, y_k = x[start:start + micro_batch], y[start:start + micro_batch]
        kept.append([g * (x_k.shape[0] / n) for g in mlp_grads(params, x_k, y_k)])
    return tuple(sum(parts) for parts in zip(*kept))
