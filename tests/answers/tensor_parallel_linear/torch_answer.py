# question: tensor_parallel_linear
# A correct answer written with PyTorch: each rank's local work as torch ops, autograd for the
# local backward passes (torch.autograd.grad), and the grader's all_reduce for the collectives.
import numpy as np
import torch


def _t(a, grad=False):
    return torch.from_numpy(np.array(a, dtype=np.float64)).requires_grad_(grad)


def _local_linear_grads(x, W, dy):
    """dL/dx, dL/dW, dL/db of y = x @ W + b on one rank, by autograd."""
    x_t, W_t, b_t = _t(x, True), _t(W, True), torch.zeros(W.shape[1], dtype=torch.float64, requires_grad=True)
    gx, gW, gb = torch.autograd.grad(torch.nn.functional.linear(x_t, W_t.T, b_t), (x_t, W_t, b_t), _t(dy))
    return gx.numpy(), gW.numpy(), gb.numpy()


def column_parallel_forward(x_ranks, W_shards, b_shards):
    return [torch.nn.functional.linear(_t(x), _t(W).T, _t(b)).numpy() for x, W, b in zip(x_ranks, W_shards, b_shards)]


def column_parallel_backward(dy_shards, x_ranks, W_shards):
    local = [_local_linear_grads(x, W, dy) for x, W, dy in zip(x_ranks, W_shards, dy_shards)]
    return all_reduce([g[0] for g in local]), [g[1] for g in local], [g[2] for g in local]


def row_parallel_forward(x_shards, W_shards, b_ranks):
    partial = all_reduce([(_t(x) @ _t(W)).numpy() for x, W in zip(x_shards, W_shards)])
    return [(_t(y) + _t(b)).numpy() for y, b in zip(partial, b_ranks)]


def row_parallel_backward(dout_ranks, x_shards, W_shards):
    local = [_local_linear_grads(x, W, d) for x, W, d in zip(x_shards, W_shards, dout_ranks)]
    return [g[0] for g in local], [g[1] for g in local], [g[2] for g in local]


def mlp_forward(x_ranks, W1_shards, b1_shards, W2_shards, b2_ranks):
    h = [torch.tanh(_t(z)).numpy() for z in column_parallel_forward(x_ranks, W1_shards, b1_shards)]
    return row_parallel_forward(h, W2_shards, b2_ranks)


def mlp_backward(dout_ranks, x_ranks, W1_shards, b1_shards, W2_shards):
    z = [_t(z, True) for z in column_parallel_forward(x_ranks, W1_shards, b1_shards)]
    h = [torch.tanh(zr) for zr in z]
    dh, dW2, db2 = row_parallel_backward(dout_ranks, [hr.detach().numpy() for hr in h], W2_shards)
    dz = [torch.autograd.grad(hr, zr, _t(g))[0].numpy() for hr, zr, g in zip(h, z, dh)]
    dx, dW1, db1 = column_parallel_backward(dz, x_ranks, W1_shards)
    return dx, dW1, db1, dW2, db2
