# expect: trap=backward-not-differentiable
# Square saves a detached copy of x "to be safe": the backward's value is right, but with
# create_graph=True the tape from it stops at the copy and never reaches x.
class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x.detach())
        return Tensor(x.data * x.data)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * x * 2.0
