# expect: wrong
# Square's backward forgets the factor 2 (recorded on the tape, so only its values are wrong):
# hvp, which differentiates a gradient through Square, must blame Square, not grad.
class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return Tensor(x.data * x.data)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return x * grad_output
