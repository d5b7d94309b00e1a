# question: straight_through
# expect: full
# A FakeQuantize object in the style of torch.ao.quantization: it holds the grid (scale, qmin,
# qmax) and exposes forward and a straight-through backward; the range test uses np.less_equal.
import numpy as np


class FakeQuantize:
    def __init__(self, scale, qmin, qmax):
        self.scale, self.qmin, self.qmax = float(scale), int(qmin), int(qmax)

    def quantize(self, x):
        return np.clip(np.rint(x / self.scale), self.qmin, self.qmax)

    def forward(self, x):
        return self.quantize(x) * self.scale

    def backward(self, dout, x):
        u = np.true_divide(x, self.scale)
        inside = np.less_equal(self.qmin, u) & np.less_equal(u, self.qmax)
        return dout * inside


def fake_quant_forward(x, scale, qmin, qmax):
    return FakeQuantize(scale, qmin, qmax).forward(x)


def fake_quant_backward(dout, x, scale, qmin, qmax):
    return FakeQuantize(scale, qmin, qmax).backward(dout, x)
