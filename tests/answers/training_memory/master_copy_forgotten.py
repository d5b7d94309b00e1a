# Trap master-copy-forgotten: mixed precision counted as 16-bit weights and gradients plus the
# optimizer's fp32 state, with no fp32 master copy: 12 bytes per parameter with Adam, not 16.
def model_state_bytes(n_params, optimizer, precision):
    weight = 4 if precision == "fp32" else 2
    states = {"sgd": 0, "momentum": 1, "adam": 2}[optimizer]
    state = {"params": weight * n_params, "grads": weight * n_params, "master": 0,
             "optimizer": 4 * states * n_params}
    state["total"] = sum(state.values())
    return state
