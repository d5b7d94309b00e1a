# expect: full
# Right, written rank by rank as SPMD code would be: a loop over r for each rank's local work,
# the collectives between the loops, and the MLP from the two layers' functions.
def column_parallel_forward(x_ranks, W_shards, b_shards):
    out = []
    for r in range(len(W_shards)):
        out.append(np.dot(x_ranks[r], W_shards[r]) + b_shards[r])
    return out


def column_parallel_backward(dy_shards, x_ranks, W_shards):
    terms, dW, db = [], [], []
    for r in range(len(W_shards)):
        terms.append(np.dot(dy_shards[r], W_shards[r].T))
        dW.append(np.dot(x_ranks[r].T, dy_shards[r]))
        db.append(np.sum(dy_shards[r], axis=0))
    return all_reduce(terms), dW, db


def row_parallel_forward(x_shards, W_shards, b_ranks):
    terms = []
    for r in range(len(W_shards)):
        terms.append(np.dot(x_shards[r], W_shards[r]))
    summed = all_reduce(terms)
    return [summed[r] + b_ranks[r] for r in range(len(summed))]


def mlp_backward(dout_ranks, x_ranks, W1_shards, b1_shards, W2_shards):
    P = len(W1_shards)
    h = [np.tanh(np.dot(x_ranks[r], W1_shards[r]) + b1_shards[r]) for r in range(P)]
    dh, dW2, db2 = row_parallel_backward(dout_ranks, h, W2_shards)
    dz = [dh[r] * (1.0 - h[r] ** 2) for r in range(P)]
    dx, dW1, db1 = column_parallel_backward(dz, x_ranks, W1_shards)
    return dx, dW1, db1, dW2, db2
