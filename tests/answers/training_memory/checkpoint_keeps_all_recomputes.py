# Trap checkpoint-keeps-all-recomputes: the backward recomputes segment after segment but frees
# nothing until the end, so every segment's saved tensors are alive at once (L t tensors again).
def checkpointed_activation_bytes(batch, seq_len, width, n_layers, saved_per_layer, dtype, every):
    tensor = batch * seq_len * width * dtype_bytes(dtype)
    n_segments = -(-n_layers // every)
    held = peak = n_segments                    # the checkpoints kept by the forward
    for j in reversed(range(n_segments)):       # recompute each segment and keep its tensors
        size = min(every, n_layers - j * every)
        held += size * saved_per_layer - 1      # its first saved tensor is the checkpoint
        peak = max(peak, held)
    return peak * tensor
