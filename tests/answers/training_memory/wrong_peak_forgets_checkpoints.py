# question: training_memory
# expect: wrong
# not named: checkpoint-keeps-all-recomputes per-layer-not-per-tensor
# The simulated schedule forgets the checkpoints still alive below the segment being recomputed.
# Tables as dicts; the checkpointed peak by simulating the schedule tensor by tensor.
import math

BYTES = {"fp64": 8, "fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}
UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
         "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
STATE = {"fp32": {"params": 4, "grads": 4, "master": 0},
         "mixed": {"params": 2, "grads": 2, "master": 4}}
OPT = {"sgd": 0, "momentum": 4, "adam": 8}


def dtype_bytes(dtype):
    return BYTES[dtype]


def convert_bytes(n_bytes, unit):
    return n_bytes / UNITS[unit]


def model_state_bytes(n_params, optimizer, precision):
    out = {k: n_params * v for k, v in STATE[precision].items()}
    out["optimizer"] = n_params * OPT[optimizer]
    out["total"] = sum(out.values())
    return out


def activation_bytes(batch, seq_len, width, n_layers, saved_per_layer, dtype):
    return n_layers * saved_per_layer * batch * seq_len * width * dtype_bytes(dtype)


def checkpointed_activation_bytes(batch, seq_len, width, n_layers, saved_per_layer, dtype, every):
    one = batch * seq_len * width * dtype_bytes(dtype)
    return _peak_tensors(n_layers, saved_per_layer, every) * one


def best_checkpoint_every(n_layers, saved_per_layer):
    return min(range(1, n_layers + 1), key=lambda k: (_peak_tensors(n_layers, saved_per_layer, k), k))


def _peak_tensors(L, t, k):
    segments = [min(k, L - a) for a in range(0, L, k)]
    alive = 1                              # (forgets the other checkpoints)
    peak = alive
    for size in reversed(segments):
        alive += size * t - 1             # the segment's saved tensors, its checkpoint among them
        peak = max(peak, alive)
        alive -= size * t                 # freed, checkpoint included
    return peak
