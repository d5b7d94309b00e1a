# Trap backward-not-differentiable: Square's backward is right in value but computed on the raw
# arrays, so with create_graph=True it is a constant and the Hessian loses Square's part.
class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return Tensor(x.data * x.data)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return Tensor(2.0 * x.data * grad_output.data)
