# Trap adam-moments-half: the optimizer state kept in the weights' dtype, so under mixed
# precision each moment takes 2 bytes instead of 4 (Adam: 2 + 2 + 4 + 4 = 12 bytes per parameter).
def model_state_bytes(n_params, optimizer, precision):
    weight = 4 if precision == "fp32" else 2
    states = {"sgd": 0, "momentum": 1, "adam": 2}[optimizer]
    state = {"params": weight * n_params, "grads": weight * n_params,
             "master": 4 * n_params if precision == "mixed" else 0,
             "optimizer": weight * states * n_params}
    state["total"] = sum(state.values())
    return state
