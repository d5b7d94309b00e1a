# Trap wrong-order: the tape is walked in recording order, so each node passes on its
# gradient before the nodes that read it (recorded later) have added their shares.
def tape_backward(dout, graph, values):
    n_in = len(values) - len(graph)
    grads = [np.zeros(np.shape(v)) for v in values]
    grads[-1] += dout
    for k, (op, i, j) in enumerate(graph):
        b = values[j] if j >= 0 else None
        da, db = op_backward(grads[n_in + k], op, values[i], b, values[n_in + k])
        grads[i] += da
        if j >= 0:
            grads[j] += db
    return grads[:n_in]
