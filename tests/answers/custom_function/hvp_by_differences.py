# Trap hvp-by-differences: hvp differences two gradients of f instead of differentiating the
# gradient on the tape (right on a smooth loss, to about 1e-10; never exact).
def hvp(f, x, v):
    h = 1e-6

    def gradient_at(values):
        t = Tensor(values, requires_grad=True)
        (g,) = grad(f(t), [t])
        return g.data

    return Tensor((gradient_at(x.data + h * v.data) - gradient_at(x.data - h * v.data)) / (2 * h))
