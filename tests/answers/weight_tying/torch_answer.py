# question: weight_tying
# A correct answer written with PyTorch: nn.Embedding and an nn.Linear without bias whose
# weight is assigned the embedding's Parameter (the usual tie), autograd for the backward,
# and plain SGD over model.parameters() (which lists the tied Parameter once) for training.
# (torch.optim is left out: importing it costs seconds in a cold sandbox.)
import numpy as np
import torch


class TiedLM(torch.nn.Module):
    def __init__(self, E, W):
        super().__init__()
        V, D = E.shape
        self.embed = torch.nn.Embedding(V, D).double()
        self.lm_head = torch.nn.Linear(D, V, bias=False).double()
        with torch.no_grad():
            self.embed.weight.copy_(torch.from_numpy(E))
        self.lm_head.weight = self.embed.weight  # one Parameter
        self.W = torch.nn.Parameter(torch.tensor(W))

    def forward(self, ids, targets):
        x = self.embed(ids)
        h = torch.tanh(x @ self.W)
        logits = self.lm_head(h)
        return torch.nn.functional.cross_entropy(logits, targets), x, h, logits


def tied_lm_forward(E, W, ids, targets):
    with torch.no_grad():
        loss, x, h, logits = TiedLM(E, W)(torch.from_numpy(ids), torch.from_numpy(targets))
    return float(loss), {"x": x.numpy(), "h": h.numpy(), "p": torch.softmax(logits, dim=1).numpy()}


def tied_lm_backward(E, W, cache, ids, targets):
    model = TiedLM(E, W)
    model(torch.from_numpy(ids), torch.from_numpy(targets))[0].backward()
    return model.embed.weight.grad.numpy(), model.W.grad.numpy()


def tied_lm_train(E, W, ids, targets, lr, steps):
    model = TiedLM(E, W)
    losses = []
    for _ in range(steps):
        model.zero_grad()
        loss = model(torch.from_numpy(ids), torch.from_numpy(targets))[0]
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():  # E once: the tie is one Parameter
                p -= lr * p.grad
        losses.append(loss.item())
    return (model.embed.weight.detach().numpy(), model.lm_head.weight.detach().numpy(),
            model.W.detach().numpy(), np.array(losses))
