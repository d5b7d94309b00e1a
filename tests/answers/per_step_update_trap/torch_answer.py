# question: per_step_update_trap
# A correct answer written with PyTorch's own ops: the test-only oracle must get full marks.
import torch
import torch.nn.functional as F


def conv1d_forward(x, w, b, stride, padding):
    return F.conv1d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b),
                    stride=stride, padding=padding).numpy()


def conv1d_backward(dout, x, w, stride, padding):
    xt = torch.tensor(x, requires_grad=True)
    wt = torch.tensor(w, requires_grad=True)
    bt = torch.zeros(w.shape[0], dtype=torch.float64, requires_grad=True)
    F.conv1d(xt, wt, bt, stride=stride, padding=padding).backward(torch.from_numpy(dout))
    return xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()
