# question: ddp_accumulation
# A correct answer written with PyTorch (CPU, float64): autograd on fresh leaves per rank, so
# .grad starts empty and every backward adds into it (the micro-steps); each micro-batch's summed
# loss over N, the global batch's rows; one all-reduce of each rank's .grad, as torch tensors.
import torch


def _loss(W, b, x, y):
    return 0.5 * ((x @ W + b - y) ** 2).sum()


def linear_loss(params, x, y):
    W, b, x, y = (torch.as_tensor(a) for a in (*params, x, y))
    return float(_loss(W, b, x, y) / x.shape[0])


def linear_grads(params, x, y):
    W, b = (torch.tensor(p, requires_grad=True) for p in params)
    (_loss(W, b, torch.as_tensor(x), torch.as_tensor(y)) / x.shape[0]).backward()
    return W.grad.numpy(), b.grad.numpy()


def ddp_grads(params, xs, ys, micro_batch):
    N = sum(len(x) for x in xs)
    buckets = []
    for x, y in zip(xs, ys):
        W, b = (torch.tensor(p, requires_grad=True) for p in params)
        for a in range(0, len(x), micro_batch):
            xk, yk = torch.as_tensor(x[a:a + micro_batch]), torch.as_tensor(y[a:a + micro_batch])
            (_loss(W, b, xk, yk) / N).backward()
        buckets.append(torch.cat([W.grad.flatten(), b.grad]))
    k = params[0].size
    return [(g[:k].reshape(params[0].shape).numpy(), g[k:].numpy()) for g in all_reduce(buckets)]
