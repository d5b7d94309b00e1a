"""training_symptoms' runs: small networks trained for S steps with one cause planted, and the
trace their training loop logs (docs/questions/training_symptoms.md).

Every run, whatever its cause: a teacher-labelled classification task (C classes, a tenth of
the labels noisy), the residual MLP of ``net.py`` (2 or 3 blocks, BatchNorm in about half of
the networks), SGD with momentum 0.9 on batches of 32, and, at a step drawn between 100 and
200, one more block appended at the end of the stack, as a run that grows its model does (it
starts as the identity, its gain 0). The validation loss is measured every 15 steps. What a
trace holds is drawn the same way for every cause (the classes, the depth, the step of the
growth, the steps of validation), so nothing in it but the losses and the gradients' norms
tells the causes apart; run i of every cause has them exactly alike (``shared``), and the checks
pair runs of different causes with one index, so an answer that reads only those cannot pass
one. The planted causes:

- ``init-scale``: every weight drawn 2.5 to 3.5 times its healthy scale (the loss is NaN within
  steps), or, in the runs ``FINITE_INIT_RUNS``, the output layer's alone 5 to 8 times, in a loop
  that clips its gradients' norm: the loss starts far above ln C (5.6 to 10.3 times in 10 runs drawn by hand) and stays finite;
- ``log-zero``: the logged loss is a hand-written KL divergence against one-hot targets,
  ``sum t (log t - log p)``, whose ``0 * log 0`` is NaN (its gradient, p - t, is still right);
- ``fp16-overflow``: at a step between 150 and 250 one example of the batch is a corrupted
  record, 3e4 to 1e5 times too large, whose activations pass float16's range;
- ``repeated-batch``: the loader hands over the same 32 examples at every step;
- ``bn-train-mode``: a BatchNorm network whose validation runs in training mode, on batches
  as the validation set is stored, sorted by class;
- ``block-not-identity``: the added block starts at full scale, its last layer scaled up until
  the loss of the step's own batch stands above the median of the last 20 steps' by at least 1
  and 6 of their standard deviations.

A run whose planted cause did not show as that cause does (an init that did not blow up, a
grown block that later diverged) is drawn again, up to ATTEMPTS times: a trace shows one cause.
"""
from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np

from backprop_traps.grader.checks.training_symptoms import shipped
from backprop_traps.grader.checks.training_symptoms.net import Momentum, Net, cross_entropy
from backprop_traps.grader.engine import practice_cache

CAUSES = ("healthy", "init-scale", "log-zero", "fp16-overflow", "repeated-batch", "bn-train-mode",
          "block-not-identity")
S, VAL_EVERY, BATCH, D, H = 300, 15, 32, 16, 32
N_TRAIN, N_VAL = 2048, 256
ATTEMPTS = 20
CLIP = 1.0


def task(rng, n, D0, C, teacher):
    """(x (n, D0), labels (n,)): the teacher's classes, a tenth of them noisy."""
    x = rng.standard_normal((n, D0))
    y = np.argmax(x @ teacher + 0.5 * rng.standard_normal((n, C)), axis=1)
    return x, y


def block(rng, full: bool):
    """[W1, W2, gain]: He's scale into the ReLU; the branch's output a fraction of the stream
    (full: He's scale there too)."""
    return [rng.standard_normal((D, H)) * np.sqrt(2.0 / D),
            rng.standard_normal((H, D)) * np.sqrt((2.0 if full else 0.25) / H), 1.0]


def loss_of(cause, logits, y):
    """(the logged loss, dlogits): the KL form of the cross-entropy for log-zero."""
    loss, dlogits, logp, onehot = cross_entropy(logits, y)
    if cause == "log-zero":
        loss = float(np.mean(np.sum(onehot * (np.log(onehot) - logp), axis=1)))
    return loss, dlogits


def grow(rng, net, cause, x, y, recent):
    """Append the new block: at gain 0, or (block-not-identity) at full scale, its last layer
    scaled up until the loss of (x, y) stands above the ``recent`` losses' median by at least
    1 and 6 of their standard deviations (a rise no noise of the run explains)."""
    new = block(rng, True)
    if cause != "block-not-identity":
        new[2] = 0.0
        net.blocks.append(new)
        return
    target = float(np.median(recent)) + max(1.0, 6.0 * float(np.std(recent)))
    W2 = new[1].copy()
    net.blocks.append(new)
    for r in np.geomspace(0.25, 16.0, 19):
        new[1] = W2 * r
        if cross_entropy(net.forward(x)[0], y)[0] >= target:
            break


def validation_loss(net, cause, x, y, order):
    if cause == "bn-train-mode":  # training mode, on the stored batches, one class at a time
        return float(np.mean([loss_of(cause, net.forward(x[order[s:s + BATCH]], train=True)[0],
                                      y[order[s:s + BATCH]])[0] for s in range(0, len(x), BATCH)]))
    return loss_of(cause, net.forward(x, train=False)[0], y)[0]


def shared(seed: int, index: int) -> tuple:
    """(C, L0, t_grow, t_spike): what run ``index`` of every cause has alike. A trace's fields
    other than its losses and norms (the classes, the depth and when it grows, the columns) come
    from these only, so the runs of one index differ in their symptoms and nothing else."""
    rng = np.random.default_rng([seed, index])
    return (int(rng.integers(4, 11)), int(rng.integers(2, 4)), int(rng.integers(100, 201)),
            int(rng.integers(150, 251)))


INIT_SCALES = {"blows-up": (2.5, 3.5), "stays-finite": (5.0, 8.0)}
"""How many times its healthy scale an init-scale run's weights are drawn: every weight
("blows-up": the loss is NaN within steps), or the output layer's alone in a loop that clips
its gradients' norm ("stays-finite": the first loss stands far above ln C, 5.6 to 10.3 times in
10 runs drawn by hand, and the run goes on, finite: only the first loss against ln C tells it;
issue 50 item 13)."""
FINITE_INIT_RUNS = (2,)
"""The init-scale runs (by index) that stay finite."""


def train(rng, cause, alike, init="blows-up"):
    """One run with ``cause`` planted, its shared draws ``alike``: (its trace, (t_spike, t_grow)).
    ``init``: how far too large an init-scale run's weights are (``INIT_SCALES``)."""
    C, L0, t_grow, t_spike = alike
    D0, lr = int(rng.integers(8, 17)), float(rng.uniform(0.03, 0.08))
    teacher = rng.standard_normal((D0, C))
    x_train, y_train = task(rng, N_TRAIN, D0, C, teacher)
    x_val, y_val = task(rng, N_VAL, D0, C, teacher)
    bn = cause == "bn-train-mode" or (cause not in ("init-scale", "block-not-identity") and rng.random() < 0.5)
    scale = float(rng.uniform(*INIT_SCALES[init])) if cause == "init-scale" else 1.0
    body = 1.0 if init == "stays-finite" else scale
    blocks = [block(rng, False) for _ in range(L0)]
    for b in blocks:
        b[0], b[1] = b[0] * body, b[1] * body
    net = Net(rng.standard_normal((D0, D)) * np.sqrt(1.0 / D0) * body, blocks,
              rng.standard_normal((D, C)) * np.sqrt(1.0 / D) * scale, bn)
    fixed = rng.integers(0, N_TRAIN, BATCH)
    order = np.argsort(y_val, kind="stable")
    loss, norms = np.empty(S), np.zeros((S, 2 + 2 * (L0 + 1)))
    depth, val_steps = np.empty(S, dtype=np.int64), np.arange(VAL_EVERY - 1, S, VAL_EVERY)
    val, optimiser = [], None
    for t in range(S):
        rows = fixed if cause == "repeated-batch" else rng.integers(0, N_TRAIN, BATCH)
        x, y = x_train[rows], y_train[rows]
        if cause == "fp16-overflow" and t == t_spike:
            x = x.copy()
            x[0] *= float(rng.uniform(3e4, 1e5))
        if t == t_grow:
            grow(rng, net, cause, x, y, loss[t - 20:t])
            optimiser = None  # the optimiser meets new parameters
        logits, cache = net.forward(x)
        loss[t], dlogits = loss_of(cause, logits, y)
        grads, dgains = net.backward(dlogits, cache)
        row = [math.sqrt(np.dot(r, r)) for r in (g.ravel() for g in grads)]
        norms[t, :len(row) - 1], norms[t, -1] = row[:-1], row[-1]  # a block not yet added: 0
        depth[t] = len(net.blocks)
        if optimiser is None:
            optimiser = Momentum(net, lr)
        step = grads + dgains
        if init == "stays-finite":  # a loop that clips its gradients' norm (the logged norms are before)
            total = float(np.sqrt(sum(float(np.sum(np.square(g))) for g in step)))
            step = [g * min(1.0, CLIP / total) for g in step] if total > 0 else step
        optimiser.step(step)
        if t % VAL_EVERY == VAL_EVERY - 1:  # t in val_steps
            val.append(validation_loss(net, cause, x_val, y_val, order))
        if SKIP_DEAD and math.isnan(loss[t]) and np.isnan(net.W_in).all():
            logged_dead(rng, cause, net, t + 1, (loss, norms, depth, val), alike)
            break
    return {"num_classes": C, "loss": loss, "grad_norms": norms, "val_steps": val_steps,
            "val_loss": np.array(val), "depth": depth}, (t_spike, t_grow)


SKIP_DEAD = True
"""Whether ``train`` stops computing a run whose network is all NaN (``logged_dead``); off, the
test holds the two ways to the same bits."""


def logged_dead(rng, cause, net, start, logs, alike) -> None:
    """The rest of a run, from step ``start``, whose network is dead: with ``W_in`` all NaN every
    stream ``h = x @ W_in`` is NaN whatever the input, so every loss, gradient, norm and
    validation loss after it is NaN, and every weight stays NaN (a NaN step, and a new block at
    the growth too). Those are written without computing them (a run that blows up at step 5
    would compute 295 steps of NaN), and the generator is advanced exactly as the steps would
    have advanced it, so a run drawn again after this one is the same run."""
    loss, norms, depth, val = logs
    t_grow, t_spike = alike[2], alike[3]
    for t in range(start, S):
        if cause != "repeated-batch":
            rng.integers(0, N_TRAIN, BATCH)
        if cause == "fp16-overflow" and t == t_spike:
            rng.uniform(3e4, 1e5)
        if t == t_grow:
            net.blocks.append(block(rng, True))
        loss[t] = np.nan
        columns = 2 + 2 * len(net.blocks)  # the norms a step logs: a block not yet added stays 0
        norms[t, :columns - 1], norms[t, -1] = np.nan, np.nan
        depth[t] = len(net.blocks)
        if t % VAL_EVERY == VAL_EVERY - 1:
            val.append(np.nan)


def rise_at_growth(loss, t_grow) -> float:
    """How far the loss at the step the block was added stands above the last 20 steps' median,
    in units of max(1, 6 of their standard deviations): the planted jump is 1 or more."""
    recent = loss[t_grow - 20:t_grow]
    return float((loss[t_grow] - np.median(recent)) / max(1.0, 6.0 * float(np.std(recent))))


def rises(loss) -> float:
    """The share of the first 100 steps where the minibatch loss went up."""
    return float(np.mean(np.diff(loss[:100]) > 0))


def init_of(cause: str, index: int) -> str:
    return "stays-finite" if cause == "init-scale" and index in FINITE_INIT_RUNS else "blows-up"


def shows(cause, trace, steps, init="blows-up") -> bool:
    """Whether the planted cause did what it does, clearly, and nothing else broke: a run with
    a finite loss and no planted jump stays well below any jump rule between the planted
    size and noise (a quarter of it: healthy runs whose minibatch noise spiked at the growth
    step read as a block not at the identity, 1 draw in 12), and the noise of a run that
    samples its batches is plain (issue 50 item 15: no right answer loses points on any draw)."""
    loss, norms = trace["loss"], trace["grad_norms"]
    finite = np.isfinite(loss) & np.isfinite(trace["val_loss"]).all()
    if cause in ("healthy", "repeated-batch", "bn-train-mode") and finite.all() and \
            rise_at_growth(loss, steps[1]) > 0.25:
        return False
    if cause in ("healthy", "bn-train-mode") and finite.all() and rises(loss) < 0.3:
        return False
    if cause == "repeated-batch" and finite.all() and rises(loss) >= 0.1:
        return False
    if cause == "init-scale":
        high = bool(np.isfinite(loss[0]) and loss[0] > 3 * np.log(trace["num_classes"]))
        if init == "stays-finite":
            return high and bool(finite.all())
        return high and not np.isfinite(loss[5])
    if cause == "log-zero":
        return bool(np.isnan(loss).all() and np.isfinite(norms).all())
    if cause == "fp16-overflow":
        t_spike = steps[0]
        return bool(np.isfinite(loss[:t_spike]).all() and not np.isfinite(loss[t_spike:]).any())
    if cause == "healthy":
        val = trace["val_loss"]
        return bool(finite.all() and val[-1] < val[0])
    if cause == "block-not-identity":
        t_grow, recent = steps[1], loss[steps[1] - 20:steps[1]]
        return bool(finite.all() and loss[t_grow] >= np.median(recent) + max(1.0, 6.0 * np.std(recent)))
    return bool(finite.all())


def in_practice(ctx) -> bool:
    """Whether ``ctx`` grades a learner's own practice (its runs may come from the cache)."""
    return bool(getattr(ctx.sandbox, "practice", False))


def trace_for(ctx, cause: str, index: int) -> dict:
    """``trace`` for a check: from the practice cache in a learner's own practice, where it is
    kept between tries (engine/practice_cache.py); in a course, always trained here."""
    return trace(ctx.seed, cause, index, practice=in_practice(ctx))


def is_kept(seed: int, cause: str, index: int) -> bool:
    """Whether run ``index`` of ``cause`` for ``seed`` is shipped with the kit or in the practice
    cache (the cache's entry not read)."""
    return shipped_trace(seed, cause, index) is not None or \
        practice_cache.has("training_symptoms", _version(), f"{seed}-{cause}-{index}")


def shipped_trace(seed: int, cause: str, index: int) -> dict | None:
    """Run ``index`` of ``cause`` from the runs shipped with the kit (shipped.py), when they were
    made for ``seed`` and it holds exactly a trace; else None (it is trained)."""
    made = shipped.runs()
    if made is None or made["seed"] != seed or cause not in CAUSES:
        return None
    raw = made["runs"].get((cause, index))
    try:
        return None if raw is None else practice_cache.matching(raw, schema())
    except (ValueError, TypeError, OverflowError):
        return None


COST = {"bn-train-mode": 4.0, "log-zero": 3.0, "healthy": 3.0, "repeated-batch": 3.0,
        "block-not-identity": 3.0, "fp16-overflow": 2.0, "init-scale": 1.0}
"""About how dear a run of each cause is to train, relative to the others (for sharing them out:
prefetch.py): a validation in training mode costs most; a run that blows up early, least."""


@functools.lru_cache(maxsize=64)
def trace(seed: int, cause: str, index: int, practice: bool = False) -> dict:
    """Run ``index`` of ``cause`` for the grading seed ``seed`` (the same run in every check that
    asks for it; run ``index`` of another cause shares its ``shared`` draws). Read-only: the
    arrays are shared between the checks. ``practice``: read from and kept in the practice
    cache (never in a course). The default seed's runs come with the kit (``shipped``)."""
    made = shipped_trace(seed, cause, index)
    if made is not None:
        return made
    name = f"{seed}-{cause}-{index}"
    if practice:
        kept = practice_cache.load("training_symptoms", _version(), name, schema())
        if kept is not None:
            return kept
    logged = trained(seed, cause, index)
    if practice:
        practice_cache.store("training_symptoms", _version(), name, logged)
    return logged


@functools.lru_cache(maxsize=1)
def _version() -> str:
    here = Path(__file__).parent
    return practice_cache.version(here / "runs.py", here / "net.py")


def schema() -> dict:
    """What a trace holds, array by array (a cached entry must match it exactly)."""
    n_val = len(range(VAL_EVERY - 1, S, VAL_EVERY))
    return {"num_classes": (int, ()), "loss": (np.float64, (S,)), "grad_norms": (np.float64, (S, None)),
            "val_steps": (np.int64, (n_val,)), "val_loss": (np.float64, (n_val,)),
            "depth": (np.int64, (S,))}


def trained(seed: int, cause: str, index: int) -> dict:
    rng = np.random.default_rng([seed, index, CAUSES.index(cause)])
    alike = shared(seed, index)
    with np.errstate(all="ignore"):
        init = init_of(cause, index)
        for _ in range(ATTEMPTS):
            logged, steps = train(rng, cause, alike, init)
            if shows(cause, logged, steps, init):
                break
    for value in logged.values():
        if isinstance(value, np.ndarray):
            if value.dtype.kind == "f":  # one NaN, whichever way it came (``logged_dead`` too)
                value[np.isnan(value)] = np.nan
            value.setflags(write=False)
    return logged
