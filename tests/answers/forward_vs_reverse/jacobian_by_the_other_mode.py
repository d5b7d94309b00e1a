# Not a named trap: each full Jacobian is built by the other mode (right values, wrong price):
# jacobian_reverse from one JVP per input, jacobian_forward from one VJP per output.
def jacobian_reverse(As):
    return np.stack([chain_jvp(As, e) for e in np.eye(As[0].shape[1])], axis=1)


def jacobian_forward(As):
    return np.stack([chain_vjp(As, e) for e in np.eye(As[-1].shape[0])], axis=0)
