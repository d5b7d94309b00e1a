# expect: unnamed
# says: float32 where the contract wants float64
# The loss right, but as a 0-d float32 array: told its dtype (red team: it was told "returned
# 2.8151, expected 2.81511", two numbers that look the same at 6 digits).
_right_loss = linear_loss


def linear_loss(params, x, y):
    return np.array(_right_loss(params, x, y), dtype=np.float32)
