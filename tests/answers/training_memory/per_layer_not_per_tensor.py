# Trap per-layer-not-per-tensor: one (B, S, D) tensor counted per layer, whatever the layer
# saves (saved_per_layer ignored), with and without checkpointing.
def activation_bytes(batch, seq_len, width, n_layers, saved_per_layer, dtype):
    return n_layers * batch * seq_len * width * dtype_bytes(dtype)


def checkpointed_activation_bytes(batch, seq_len, width, n_layers, saved_per_layer, dtype, every):
    tensor = batch * seq_len * width * dtype_bytes(dtype)
    n_segments = -(-n_layers // every)
    peak = max(j + min(every, n_layers - j * every) for j in range(n_segments))
    return peak * tensor
