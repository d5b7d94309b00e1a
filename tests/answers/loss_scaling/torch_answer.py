# question: loss_scaling
# A correct answer written with PyTorch (CPU): the real torch.amp.GradScaler (its update rule
# is torch._amp_update_scale_, its unscale torch._amp_foreach_non_finite_check_and_unscale_)
# and torch.nn.utils.clip_grad_norm_. PyTorch keeps the scale in float32 and refuses to
# unscale float16 gradients, so the float16 backward is emulated as the kit's contract says
# (products rounded once to float16) and its values are held in float64 .grad tensors.
import numpy as np
import torch

torch.set_num_threads(1)  # tiny tensors: one thread, no spinning on a busy machine


def update_scale(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    scale_t = torch.tensor(scale, dtype=torch.float32)
    tracker_t = torch.tensor(growth_tracker, dtype=torch.int32)
    torch._amp_update_scale_(scale_t, tracker_t, torch.tensor(float(found_inf)),
                             growth_factor, backoff_factor, growth_interval)
    return scale_t.item(), int(tracker_t.item())


def unscale_grads(scaled_grads, scale):
    grads = [torch.from_numpy(g.astype(np.float64)) for g in scaled_grads]  # float16 values, float64 storage
    found_inf = torch.zeros(())
    inv_scale = torch.tensor(1.0 / scale, dtype=torch.float32)  # as GradScaler.unscale_ computes it
    torch._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)
    return [g.numpy() for g in grads], bool(found_inf.item())


def _with_grads(tensors):
    params = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in tensors]
    for p, g in zip(params, tensors):
        p.grad = torch.from_numpy(np.array(g, dtype=np.float64))
    return params


def clip_grad_norm(grads, max_norm):
    params = _with_grads(grads)
    total_norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
    return [p.grad.numpy() for p in params], total_norm.item()


def amp_step(params, grads, loss, state, hparams):
    scale, growth_tracker = state
    scaler = torch.amp.GradScaler("cpu", init_scale=scale, growth_factor=hparams["growth_factor"],
                                  backoff_factor=hparams["backoff_factor"],
                                  growth_interval=hparams["growth_interval"])
    scaler._init_growth_tracker = growth_tracker  # resume the scaler's state
    weights = [torch.tensor(p, requires_grad=True) for p in params]
    optimizer = torch.optim.SGD(weights, lr=hparams["lr"])
    # A loss whose gradients are `grads` and whose value is `loss`; backward of the scaled loss.
    surrogate = loss + sum(torch.sum(torch.from_numpy(g) * (w - w.detach())) for g, w in zip(grads, weights))
    scaler.scale(surrogate).backward()
    with np.errstate(over="ignore"):  # the float16 backward, emulated: overflow gives inf
        for w in weights:
            w.grad = torch.from_numpy(w.grad.numpy().astype(np.float16).astype(np.float64))
    scaler.unscale_(optimizer)
    skipped = bool(sum(v.item() for v in scaler._found_inf_per_device(optimizer).values()))
    clipped = None
    if not skipped:
        torch.nn.utils.clip_grad_norm_(weights, hparams["max_norm"])
        clipped = [w.grad.numpy().copy() for w in weights]
    scaler.step(optimizer)
    scaler.update()
    new_state = (scaler.get_scale(), int(scaler._growth_tracker.item()))
    return [w.detach().numpy() for w in weights], new_state, clipped, skipped
