# Trap tie-order: the running max is replaced on `>=`, so a tie goes to the last maximum.
def maxpool2d_forward(x, kernel_size, stride):
    n, c, h, w = x.shape
    k, s = kernel_size, stride
    ho, wo = (h - k) // s + 1, (w - k) // s + 1
    out = np.full((n, c, ho, wo), -np.inf)
    argmax = np.zeros((n, c, ho, wo), dtype=np.int64)
    for dy in range(k):
        for dx in range(k):
            vals = x[:, :, dy:dy + s * (ho - 1) + 1:s, dx:dx + s * (wo - 1) + 1:s]
            rows = (np.arange(ho) * s + dy)[:, None]
            cols = (np.arange(wo) * s + dx)[None, :]
            take = vals >= out
            out = np.where(take, vals, out)
            argmax = np.where(take, rows * w + cols, argmax)
    return out, argmax
