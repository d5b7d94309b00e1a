# expect: unnamed
# RoundSTE rounds halves up (floor(x + 0.5)) instead of to the even integer: 2.5 gives 3, -0.5
# gives 0. The straight-through backward is right.
class RoundSTE(Function):
    @staticmethod
    def forward(ctx, x):
        return Tensor(np.floor(x.data + 0.5))

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output
