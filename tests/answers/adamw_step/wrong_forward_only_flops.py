# expect: wrong
# Counts the forward pass only (2 N D).
def training_flops(n_params, n_tokens):
    return 2.0 * n_params * n_tokens
