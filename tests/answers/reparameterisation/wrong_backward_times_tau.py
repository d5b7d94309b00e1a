# expect: trap=backward-missing-temperature
# The backward multiplies by tau where it must divide.
def gumbel_softmax_backward(dy, y, tau):
    return y * (dy - (dy * y).sum(axis=1, keepdims=True)) * tau
