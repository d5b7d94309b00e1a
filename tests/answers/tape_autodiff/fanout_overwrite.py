# Trap fanout-overwrite: each consumer assigns its share into the buffer (=), so a slot read
# by several nodes keeps only the share of the consumer visited last.
def tape_backward(dout, graph, values):
    n_in = len(values) - len(graph)
    grads = [np.zeros(np.shape(v)) for v in values]
    grads[-1] = np.asarray(dout, dtype=np.float64)
    for k in reversed(range(len(graph))):
        op, i, j = graph[k]
        b = values[j] if j >= 0 else None
        da, db = op_backward(grads[n_in + k], op, values[i], b, values[n_in + k])
        grads[i] = da
        if j >= 0:
            grads[j] = db
    return grads[:n_in]
