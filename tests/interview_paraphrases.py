"""Correct answers to each question's interview, in plain words that are not the notebook's:
how candidates who know the answer actually say it. ``grade interview`` must find most of the
key points in each (tests/test_keypoints.py). Written apart from the key points, on purpose."""

PARAPHRASES = {
    "routing_trap": [
        "Max pooling's backward has to send the gradient to whichever element was the largest in "
        "the window, everything else gets zero. The inference kernel throws away that location, so "
        "in training you need to store the argmax indices during the forward. If windows overlap "
        "you must add the contributions rather than overwrite them, and for ties pick the first max.",
        "The gradient of max is one-hot: only the winner of each window gets dout. The fast kernel "
        "doesn't remember which position won, so backward can't do it. Save the index per output. "
        "Overlapping windows mean one input can win twice, so accumulate with atomics.",
        "Backward needs to know where the max came from; the inference path never kept it. Cache "
        "the positions, route each upstream gradient only to the max element, use += when strides "
        "are smaller than the kernel, and break ties consistently, say the first occurrence. Avg "
        "pooling is different, it just divides by k squared and spreads evenly.",
    ],
    "per_step_update_trap": [
        "The kernel weights are reused at every time step, so the weight gradient has to be the sum "
        "of the contributions from all positions and all examples. The loop is overwriting dw at "
        "each step, so only the last position counts. Accumulate instead; the bias gradient also "
        "needs summing. Check it against a numerical gradient.",
        "It's a weight-sharing bug: each position's window contributes to dW and you need to add "
        "them up, plus sum across the batch. Right now it's assigning, so you keep the final window "
        "only. Raising the learning rate won't help because the gradient itself is wrong.",
        "Same weights used everywhere means dw = sum over n and t of dout times the input window. "
        "The code replaces instead of +=, so it's basically one window's gradient. I'd confirm with "
        "finite differences, and db should sum over positions too.",
    ],
    "vram_trap": [
        "In training you have to hold on to the intermediate activations of every layer for the "
        "backward pass, and that grows with batch size times number of layers. Fix it with "
        "activation checkpointing: store only some layers and recompute the others during "
        "backward, roughly sqrt(L) memory, at the cost of an extra forward, about 30% slower. "
        "Also store ReLU masks as bits, and use gradient accumulation with micro-batches.",
        "Inference frees each activation right away; training keeps them all because backprop "
        "needs them, plus gradients and Adam's moments. Trade compute for memory: gradient "
        "checkpointing, rematerialize segments in the backward. It costs one more forward pass. "
        "Pack ReLU masks to one bit per element.",
        "Most of the memory is saved activations, proportional to batch times depth. Checkpoint "
        "every sqrt(L) layers and recompute, which is roughly a third more compute. Optimizer "
        "state is 16 bytes per parameter with mixed precision Adam. If still too big, micro "
        "batches with gradient accumulation keep the same effective batch.",
    ],
    "softmax_ce": [
        "Write the loss as logsumexp of the logits minus the correct logit; the derivative of "
        "logsumexp is softmax, so the gradient is softmax minus the one-hot vector, divided by the "
        "batch size for a mean. For stability subtract the max logit before exponentiating and "
        "compute log-softmax directly instead of taking log of p.",
        "dL/dz = p - y. You get it from the chain rule: the softmax Jacobian is diag(p) - p p^T "
        "and the p's cancel. To avoid overflow, shift by the largest logit. Average over N.",
        "The gradient is the probabilities minus the label, so subtract 1 at the correct class. "
        "Numerically: subtract the row maximum so exp never overflows, and use the log-sum-exp "
        "trick for the loss so a tiny probability doesn't give log(0) = -inf.",
    ],
    "mlp_backprop": [
        "Start with dout = (pred - y) / N. For the second layer, dW2 = h.T @ dout, db2 is dout "
        "summed over the batch, and dh = dout @ W2.T. Through the ReLU, zero the gradient where "
        "z was negative. Then dW1 = x.T @ dz and db1 the sum over rows. I'd verify against finite "
        "differences.",
        "The weight gradient is the outer product of the layer input and the upstream gradient, "
        "summed over examples; the bias gradient sums over the batch dimension; to go down a layer "
        "multiply by the transposed weight matrix; the ReLU's derivative is 1 where the "
        "pre-activation is positive. Then check it numerically with central differences.",
        "Residual is out minus y over N. dW2 = h transpose times that, db2 = sum(axis=0), gradient "
        "to the hidden layer through W2 transpose, mask with z > 0, repeat for layer one. Shapes "
        "aren't enough, I'd run a gradient check.",
    ],
    "tape_autodiff": [
        "Go through the recorded ops in reverse order, which is a valid topological order. Each op "
        "has a local backward, a vector-Jacobian product. Keep a gradient per node initialised to "
        "zero, seed the output with 1, and add the contributions into the inputs' gradients, "
        "because a variable used in several places must sum its gradients.",
        "Reverse-mode: iterate the tape backwards, call each node's VJP and accumulate with += "
        "into the parents' grads, since fan-out means summing over paths. The forward has to "
        "store whatever values the backward needs.",
        "Initialise all grads to zero and the loss grad to one, then walk from the last operation "
        "to the first; for each operation apply the chain rule locally and add to each input's "
        "gradient rather than setting it, otherwise x * x gets half its gradient.",
    ],
    "forward_vs_reverse": [
        "Forward mode computes Jacobian-vector products, one input direction at a time, so with "
        "ten million inputs you need ten million passes. Reverse mode computes vector-Jacobian "
        "products, one output at a time, and a scalar loss is one output, so one backward pass. "
        "Both are exact; it's just the order you multiply the Jacobians. Reverse needs memory for "
        "the activations. Forward is better when there are few inputs and many outputs.",
        "It's about which end of the chain you start from. JVP gives a column of the Jacobian per "
        "pass, VJP gives a row. Cost scales with the number of inputs for forward and the number "
        "of outputs for reverse. Forward mode doesn't store anything, so it wins for tall "
        "Jacobians or Hessian-vector products.",
        "Both modes are exact chain rule. Forward pushes a tangent through per input; backprop "
        "pulls a cotangent back per output, and the loss is a single output. Reverse pays by "
        "saving activations. Use forward when outputs outnumber inputs.",
    ],
    "straight_through": [
        "Round has zero gradient almost everywhere, so you'd never learn. The straight-through "
        "estimator treats it as the identity in the backward, but only inside the representable "
        "range: where the input was clipped to qmin or qmax you pass zero. So the backward is dout "
        "times a mask of in-range values, which needs x, not the output. It works since rounding "
        "error is bounded by half a step.",
        "The true derivative is zero, it's a step function. Use STE: pretend the quantizer is the "
        "identity and copy the gradient through, except out of range where you clamp, there the "
        "gradient is blocked. You compute the mask from x / s between qmin and qmax.",
        "Pass the gradient straight through where qmin <= x/s <= qmax, zero outside because "
        "clipping really flattens the function. Basically you differentiate clip(x) as a "
        "surrogate. The rounding noise is small and unbiased so this is fine.",
    ],
    "training_memory": [
        "Per parameter: bf16 weights 2 bytes, bf16 gradients 2, an fp32 master copy 4, Adam's m "
        "and v in fp32 8, so 16 bytes, 112 GB for 7B, which doesn't fit on a single 80 GB card, "
        "so shard with FSDP. Then activations scale with batch and sequence length and the number "
        "of saved tensors per layer; checkpointing trades recompute for that memory.",
        "Weights 14 GB, gradients 14, full precision master weights 28, optimizer moments 56: "
        "112 GB before activations. You need ZeRO stage 3 or several GPUs. Activations depend on "
        "batch times seq times hidden times layers; use activation checkpointing, about sqrt of "
        "the depth.",
        "Mixed precision Adam costs sixteen bytes per param: 2 for weights, 2 for grads, 4 for the "
        "fp32 copy, 4 and 4 for the first and second moments. So 112 GB, more than one GPU holds. "
        "Plus activations, which grow with tokens in the batch; recompute them with checkpoints.",
    ],
    "attention_backward": [
        "FlashAttention processes keys in blocks with an online softmax, keeping a running max and "
        "sum per query row. It stores only the output and the log-sum-exp per row. In the backward "
        "it recomputes the attention probabilities tile by tile from the logsumexp, and uses the "
        "fact that rowsum(dP * P) equals rowsum(dO * O). The N x N matrix never goes to HBM, so it "
        "is actually faster because attention is memory-bound.",
        "It never materializes P. The forward keeps O and the softmax statistics (lse), O(N) "
        "memory. Backward: recompute S = QK^T for each tile, P = exp(S - lse), compute dV, dP, and "
        "dS = P * (dP - D) where D = rowsum(dO * O). Extra matmul but less memory traffic, so "
        "faster.",
        "Tile Q, K, V into SRAM, do a streaming softmax with rescaling. Save the logsumexp per "
        "row instead of the probabilities. In the backward recompute each block of P exactly and "
        "get the softmax backward's row term from dO dot O. IO-aware, so it's faster.",
    ],
    "layernorm_backward": [
        "You can't treat the mean and variance as constants; they're functions of x. With g = dy * "
        "gamma and xhat the normalized input, dx = rstd * (g - mean(g) - xhat * mean(g * xhat)). "
        "dgamma = sum of dy * xhat over the batch and dbeta = sum of dy. Sanity check: each row of "
        "dx sums to zero and it's orthogonal to xhat.",
        "Three paths: directly, through the mean, and through the variance. Subtract the average "
        "of the gradient and subtract x-hat times the average of gradient times x-hat, then scale "
        "by 1/sigma. The result has zero mean over the features, since shifting the input "
        "changes nothing. The parameter gradients are sums over the batch.",
        "dbeta = dy.sum(0), dgamma = (dy * x_hat).sum(0). For dx the statistics depend on x too, "
        "so dx = (1/std) * (g - g.mean() - x_hat * (g * x_hat).mean()). The rows of dx sum to 0, "
        "a good test.",
    ],
    "loss_scaling": [
        "Scale the loss up so small fp16 gradients don't underflow, backward, then unscale the "
        "gradients by dividing by the scale before clipping. Check for infs or NaNs; if there are "
        "any, skip the step and reduce the scale by half. Otherwise clip by the global norm of the "
        "unscaled gradients and step. After enough steps without overflow, double the scale.",
        "scaler.scale(loss).backward(), scaler.unscale_(optimizer), clip_grad_norm_ on the real "
        "gradients, scaler.step, scaler.update. Unscaling first matters because otherwise you clip "
        "gradients that are 65536 times too big. Overflow means skip and back off the scale; a "
        "long run of good steps means grow it.",
        "Multiply the loss by S to keep tiny gradients representable, divide by S afterwards, "
        "detect inf/nan, and if found don't update and lower the scale. If fine, clip the true "
        "gradient using one norm over all parameters, then update; increase the scale every 2000 "
        "clean steps.",
    ],
    "grad_accumulation": [
        "Run 8 micro-batches of 64 and accumulate gradients, zeroing once and stepping once. Each "
        "micro-batch's summed loss should be divided by the total batch size, 512, so examples "
        "are weighted equally; dividing by 8 is only right if all micro-batches are the same size. "
        "For LMs normalize by the number of tokens. Keep the accumulators in fp32. Memory is only "
        "one micro-batch of activations.",
        "The loss is a mean over all N examples, so scale each chunk by n_k / N and let backward "
        "add into the .grad buffers; one optimizer step at the end. If the last chunk is smaller, "
        "averaging per chunk and dividing by K weights examples unequally. With padding, count "
        "real tokens.",
        "Accumulate over micro batches, weight each by its fraction of the full batch, step once. "
        "Uneven batches break the divide-by-steps rule. Use fp32 for the sums. Peak memory stays "
        "at a micro batch's activations.",
    ],
    "reparameterisation": [
        "Use the reparameterization trick: sample eps from a standard normal and set z = mu + "
        "sigma * eps, so gradients flow to mu and sigma; dz/dmu = 1 and dz/dsigma = eps. That's "
        "the pathwise estimator. If z is discrete you can't do that, so use the score function / "
        "REINFORCE estimator, f(z) times grad log p, which has high variance, or a Gumbel-softmax "
        "relaxation with a temperature.",
        "Move the noise outside: z = mu + sigma*epsilon. Then backprop through z: gradient for mu "
        "is f'(z), for sigma f'(z) times epsilon. For categories use Gumbel-softmax, or the "
        "log-derivative trick, which works for non-differentiable f but is much noisier.",
        "Pathwise gradient via reparameterisation with eps ~ N(0, 1). Alternatively the "
        "likelihood ratio estimator, unbiased even for discrete variables but with higher variance, "
        "reduced with a baseline. For categorical, Gumbel-softmax with temperature tau.",
    ],
}

WRONG = {
    "softmax_ce": "Just use the formula p - y, take log of p with an epsilon so it never hits zero.",
    "vram_trap": "Get a bigger GPU or lower the batch size until it fits.",
    "layernorm_backward": "dx is dy times gamma divided by the standard deviation.",
    "loss_scaling": "Scale the loss, call backward, clip the gradients, then step and update the scaler.",
    "grad_accumulation": "Divide each loss by the number of accumulation steps and step at the end.",
    "reparameterisation": "You can't differentiate through sampling, so treat z as a constant.",
}
