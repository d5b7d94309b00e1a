# expect: full
# Right, with the bias inside the one all-reduce: the row-parallel layer adds b on rank 0 only
# (the block's second layer splits it, b / P on every rank), so the sum carries it once. The
# same values from the same one collective; its outputs are the sums all_reduce returned, with
# no bias added after them (red team: this lost 3 points as "summed some other way").
def row_parallel_forward(x_shards, W_shards, b_ranks):
    partial = [x @ W for x, W in zip(x_shards, W_shards)]
    partial[0] = partial[0] + b_ranks[0]
    return all_reduce(partial)


def mlp_forward(x_ranks, W1_shards, b1_shards, W2_shards, b2_ranks):
    h_shards = [np.tanh(x @ W + b) for x, W, b in zip(x_ranks, W1_shards, b1_shards)]
    P = len(h_shards)
    return all_reduce([h @ W + b / P for h, W, b in zip(h_shards, W2_shards, b2_ranks)])
