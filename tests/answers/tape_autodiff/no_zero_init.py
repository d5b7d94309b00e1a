# Trap no-zero-init: the gradient buffers of a graph are made once and kept between calls
# (a tape object reused without zero_grad()), so a second call adds onto the first's.
_buffers = {}


def tape_backward(dout, graph, values):
    n_in = len(values) - len(graph)
    key = repr(graph)
    if key not in _buffers:
        _buffers[key] = [np.zeros(np.shape(v)) for v in values]
    grads = _buffers[key]
    grads[-1] += dout
    for k in reversed(range(len(graph))):
        op, i, j = graph[k]
        b = values[j] if j >= 0 else None
        da, db = op_backward(grads[n_in + k], op, values[i], b, values[n_in + k])
        grads[i] += da
        if j >= 0:
            grads[j] += db
    return [g.copy() for g in grads[:n_in]]
