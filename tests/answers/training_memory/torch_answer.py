# question: training_memory
# A correct answer that measures instead of reasoning, with PyTorch (CPU): the test-only oracle
# must get full marks.
# - Model state: real torch.optim optimizers step once on "meta" tensors (shapes and dtypes, no
#   memory), and the bytes of the weights, gradients, master copy and per-element optimizer
#   state are summed from what they hold (Adam's one-number `step` counter is not per element).
# - Activations: a stack of layers, each a chain of t `sin` ops (each saves its input: t saved
#   tensors per layer, the layer's input among them), runs under saved-tensor hooks that count
#   every distinct storage autograd keeps alive; the count drops when autograd frees a saved
#   tensor. Checkpointing runs the schedule by hand: a forward under no_grad keeping each
#   segment's input, then per segment a recompute with grad, autograd.backward, and the
#   checkpoint dropped. The peak count, in tensors, times T gives the bytes. Tensors have one
#   element: the count of tensors does not depend on their size.
# torch is imported on first use, not at load: loading a submission has 10 s, and importing
# torch on a busy machine can take most of them.
import functools
import importlib

PREFIX = {"B": 0, "K": 1, "M": 2, "G": 3, "T": 4}


class _Lazy:
    def __getattr__(self, name):
        return getattr(importlib.import_module("torch"), name)


torch = _Lazy()


def dtype_bytes(dtype):
    dtypes = {"fp64": torch.float64, "fp32": torch.float32, "fp16": torch.float16,
              "bf16": torch.bfloat16, "fp8": torch.float8_e4m3fn}
    return torch.empty((), dtype=dtypes[dtype]).element_size()


def convert_bytes(n_bytes, unit):
    base = 1024 if unit.endswith("iB") else 1000
    return n_bytes / base ** PREFIX[unit[0]]


def model_state_bytes(n_params, optimizer, precision):
    weight_dtype = torch.float32 if precision == "fp32" else torch.bfloat16
    weights = torch.empty(n_params, device="meta", dtype=weight_dtype, requires_grad=True)
    weights.grad = torch.empty_like(weights)
    updated = weights
    if precision == "mixed":
        updated = weights.detach().float().requires_grad_(True)   # the fp32 master copy
        updated.grad = weights.grad.float()                         # a temporary, not state
    make = {"sgd": lambda p: torch.optim.SGD(p, lr=0.1, foreach=False),
            "momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, foreach=False),
            "adam": lambda p: torch.optim.Adam(p, foreach=False)}[optimizer]
    opt = make([updated])
    opt.step()
    per_element = [v for v in opt.state[updated].values()
                   if torch.is_tensor(v) and v.shape == updated.shape]
    state = {"params": weights.nbytes, "grads": weights.grad.nbytes,
             "master": updated.nbytes if precision == "mixed" else 0,
             "optimizer": sum(v.nbytes for v in per_element)}
    state["total"] = sum(state.values())
    return {k: int(v) for k, v in state.items()}


class _Live:
    """Storages kept alive by autograd (and by the checkpoint list), counted once each."""

    def __init__(self):
        self.refs, self.count, self.peak = {}, 0, 0

    def hold(self, tensor):
        key = tensor.untyped_storage()._cdata
        self.refs[key] = self.refs.get(key, 0) + 1
        if self.refs[key] == 1:
            self.count += 1
            self.peak = max(self.peak, self.count)
        return key

    def release(self, key):
        self.refs[key] -= 1
        if self.refs[key] == 0:
            del self.refs[key]
            self.count -= 1


class _Saved:
    """What a pack hook hands autograd: freed (and uncounted) when autograd lets it go."""

    def __init__(self, live, tensor):
        self.live, self.tensor, self.key = live, tensor, live.hold(tensor)

    def __del__(self):
        self.live.release(self.key)


def _layers(h, n_layers, t):
    for _ in range(n_layers * t):
        h = torch.sin(h)   # saves its input: t of them per layer, the layer's input first
    return h


def _hooks(live):
    return torch.autograd.graph.saved_tensors_hooks(lambda x: _Saved(live, x), lambda s: s.tensor)


@functools.lru_cache(maxsize=None)
def _peak_tensors(n_layers, t, every):
    live = _Live()
    x = torch.ones(1, requires_grad=True)
    if every is None:
        with _hooks(live):
            out = _layers(x, n_layers, t)
        out.backward(torch.ones_like(out))
        return live.peak
    checkpoints, h = [], x.detach()
    with torch.no_grad():
        for start in range(0, n_layers, every):
            checkpoints.append(_Saved(live, h))
            h = _layers(h, min(every, n_layers - start), t)
    dh = torch.ones_like(h)
    for j in reversed(range(len(checkpoints))):
        inp = checkpoints[j].tensor.detach().requires_grad_(True)   # shares the checkpoint's storage
        with _hooks(live):
            out = _layers(inp, min(every, n_layers - j * every), t)
        torch.autograd.backward(out, dh)
        dh = inp.grad
        del out, inp
        checkpoints.pop()   # the checkpoint is freed with its segment
    return live.peak


def _tensor(batch, seq_len, width, dtype):
    return batch * seq_len * width * dtype_bytes(dtype)


def activation_bytes(batch, seq_len, width, n_layers, saved_per_layer, dtype):
    return _peak_tensors(n_layers, saved_per_layer, None) * _tensor(batch, seq_len, width, dtype)


def checkpointed_activation_bytes(batch, seq_len, width, n_layers, saved_per_layer, dtype, every):
    return _peak_tensors(n_layers, saved_per_layer, every) * _tensor(batch, seq_len, width, dtype)


def best_checkpoint_every(n_layers, saved_per_layer):
    return min(range(1, n_layers + 1), key=lambda k: _peak_tensors(n_layers, saved_per_layer, k))
