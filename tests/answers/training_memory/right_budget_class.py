# question: training_memory
# expect: full
# A small Budget class holds the unit tables; the peak from the closed form in the contract.
from dataclasses import dataclass
import numpy as np


@dataclass(frozen=True)
class Budget:
    sizes = dict(fp64=8, fp32=4, fp16=2, bf16=2, fp8=1)

    def unit(self, name):
        prefix = "KMGT".index(name[0]) + 1 if name != "B" else 0
        return (1024 ** prefix) if name.endswith("iB") else (1000 ** prefix)


B = Budget()


def dtype_bytes(dtype):
    return int(B.sizes[dtype])


def convert_bytes(n_bytes, unit):
    return float(n_bytes) / B.unit(unit)


def model_state_bytes(n_params, optimizer, precision):
    half = precision == "mixed"
    per = {"params": 2 if half else 4, "grads": 2 if half else 4, "master": 4 if half else 0,
           "optimizer": {"sgd": 0, "momentum": 1, "adam": 2}[optimizer] * 4}
    d = {key: int(n_params) * v for key, v in per.items()}
    d["total"] = d["params"] + d["grads"] + d["master"] + d["optimizer"]
    return d


def activation_bytes(batch, seq_len, width, n_layers, saved_per_layer, dtype):
    return int(np.prod([batch, seq_len, width, n_layers, saved_per_layer, dtype_bytes(dtype)], dtype=object))


def checkpointed_activation_bytes(batch, seq_len, width, n_layers, saved_per_layer, dtype, every):
    L, t, k = n_layers, saved_per_layer, every
    if k >= L:
        peak = L * t
    else:
        m = -(-L // k)
        peak = (m - 1) + k * t if L % k == 0 else max(m - 2 + k * t, m - 1 + (L - (m - 1) * k) * t - 1 + 1 - 1)
    return peak * batch * seq_len * width * dtype_bytes(dtype)


def best_checkpoint_every(n_layers, saved_per_layer):
    costs = [checkpointed_activation_bytes(1, 1, 1, n_layers, saved_per_layer, "fp8", k)
             for k in range(1, n_layers + 1)]
    return 1 + costs.index(min(costs))
