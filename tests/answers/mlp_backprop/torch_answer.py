# question: mlp_backprop
# A correct answer written with PyTorch's own ops: the test-only oracle must get full marks.
import torch
import torch.nn.functional as F


def mse_loss(out, y):
    o = torch.tensor(out, requires_grad=True)
    loss = 0.5 * F.mse_loss(o, torch.from_numpy(y), reduction="sum") / out.shape[0]
    loss.backward()
    return loss.item(), o.grad.numpy()


def mlp_forward(x, W1, b1, W2, b2):
    z = F.linear(torch.from_numpy(x), torch.from_numpy(W1).T, torch.from_numpy(b1))
    h = torch.relu(z)
    out = F.linear(h, torch.from_numpy(W2).T, torch.from_numpy(b2))
    return out.numpy(), h.numpy(), z.numpy()


def mlp_backward(dout, x, z, h, W1, W2):
    """Autograd through the same two layers. The biases only shift z and out, so zeros stand
    in for them, with the forward's own shift z - x @ W1 added as a constant (that keeps the
    ReLU's mask exactly the forward's), and their gradients still come out right."""
    x_t, W1_t, W2_t = (torch.tensor(a, requires_grad=True) for a in (x, W1, W2))
    b1_t = torch.zeros(W1.shape[1], dtype=torch.float64, requires_grad=True)
    b2_t = torch.zeros(W2.shape[1], dtype=torch.float64, requires_grad=True)
    shift = torch.from_numpy(z - x @ W1)  # N, H: b1 as the forward added it
    out = torch.relu(x_t @ W1_t + shift + b1_t) @ W2_t + b2_t
    out.backward(torch.from_numpy(dout))
    return tuple(t.grad.numpy() for t in (x_t, W1_t, b1_t, W2_t, b2_t))
