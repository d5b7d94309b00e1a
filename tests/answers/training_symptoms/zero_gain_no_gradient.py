# Trap zero-gain-no-gradient: "a gain of 0 passes nothing back", so the gain's gradient is
# scaled by the gain itself, and a block that starts at 0 never moves.
_right_backward = gated_block_backward


def gated_block_backward(dout, h, W1, W2, gain):
    dh, dW1, dW2, dgain = _right_backward(dout, h, W1, W2, gain)
    return dh, dW1, dW2, gain * dgain
