# Trap saved-output-root: Square saves its output and takes the square root in the backward,
# which gives |x|: the gradient has the wrong sign wherever x < 0.
class Square(Function):
    @staticmethod
    def forward(ctx, x):
        y = Tensor(x.data ** 2)
        ctx.save_for_backward(y)  # "saves memory": x is not needed any more
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * Tensor(np.sqrt(y.data)) * 2.0
