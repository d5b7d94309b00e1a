# question: training_symptoms
# A correct answer written with PyTorch: the symptoms read with tensor ops, the gated block as
# a torch.nn.Module whose gain is a Parameter, its backward by autograd.
import numpy as np
import torch


def diagnose(trace):
    loss = torch.from_numpy(np.asarray(trace["loss"]))
    norms, val = torch.from_numpy(trace["grad_norms"]), torch.from_numpy(trace["val_loss"])
    first_loss, untrained = float(loss[0]), float(torch.log(torch.tensor(float(trace["num_classes"]))))
    if torch.isfinite(loss[0]) and first_loss > 3 * untrained:
        return "init-scale"
    broken = ~torch.isfinite(loss)
    if broken.any():
        first = int(torch.nonzero(broken)[0])
        if first >= 40:
            return "fp16-overflow"
        if first == 0 and bool(torch.isfinite(norms[:10]).all()) and float(norms[0].max()) < 100:
            return "log-zero"
        return "init-scale"
    depth = torch.from_numpy(trace["depth"])
    for t in (torch.nonzero(depth[1:] != depth[:-1]).flatten() + 1).tolist():
        before = loss[max(0, t - 20):t]
        if float(loss[t]) > float(before.median()) + max(0.5, 4 * float(before.std(unbiased=False))):
            return "block-not-identity"
    if float((loss[1:100] > loss[:99]).double().mean()) < 0.2:
        return "repeated-batch"
    if float(val[-1]) > float(val[0]) or float(val[-1]) > 2 * float(loss[-15:].mean()):
        return "bn-train-mode"
    return "healthy"


class GatedBlock(torch.nn.Module):
    def __init__(self, W1, W2, gain):
        super().__init__()
        self.W1, self.W2 = torch.nn.Parameter(torch.tensor(W1)), torch.nn.Parameter(torch.tensor(W2))
        self.gain = torch.nn.Parameter(torch.tensor(gain))

    def forward(self, h):
        return h + self.gain * (torch.relu(h @ self.W1) @ self.W2)


def gated_block_forward(h, W1, W2, gain):
    with torch.no_grad():
        return GatedBlock(W1, W2, gain)(torch.from_numpy(h)).numpy()


def gated_block_backward(dout, h, W1, W2, gain):
    block = GatedBlock(W1, W2, gain)
    h_t = torch.tensor(h, requires_grad=True)
    block(h_t).backward(torch.from_numpy(dout))
    return h_t.grad.numpy(), block.W1.grad.numpy(), block.W2.grad.numpy(), block.gain.grad.numpy()
