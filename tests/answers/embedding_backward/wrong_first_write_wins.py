# expect: trap=overwrite-repeats
# A loop that skips a row once it has been written: the first occurrence of an id wins.
def embedding_backward(dout, ids, V, padding_idx):
    D = dout.shape[-1]
    dW = np.zeros((V, D))
    seen = set()
    for v, g in zip(ids.reshape(-1), dout.reshape(-1, D)):
        if v == padding_idx or v in seen:
            continue
        seen.add(v)
        dW[v] = g
    return dW
