# expect: wrong
# The forward reads W[padding_idx] as it is (PyTorch's F.embedding does; nn.Embedding keeps that
# row at zero): here the padding row holds values, and its positions must read zeros.
def embedding_forward(W, ids, padding_idx):
    return W[ids]
