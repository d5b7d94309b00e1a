"""Answers to the interviews of questions 15, 17, 19 and 20 as candidates say them, written
without the notebooks open: correct ones (the last in formulas), which must hit most key
points, and wrong ones, which must hit fewer than half (tests/learner/test_keypoints.py). Questions
16 and 18 keep theirs in tests/test_key_points_16_18.py."""

PARAPHRASES = {
    'batchnorm_backward': [
        "In train mode the mean and variance are computed over the batch, so each example's output "
        "depends on the other examples in the batch and dx picks up two extra terms from the mean and "
        "the variance. It's the LayerNorm derivation transposed: the reduction runs over the batch axis "
        "instead of the features. Every column of dx sums to zero. dgamma and dbeta are the usual "
        "sums over the batch. At eval time you use the running mean and running variance, which were "
        "updated with the unbiased estimate, so the layer is just an affine map and the backward is "
        "simple. With a batch size of 1 the variance is zero and you can't normalise in training.",
        "Same three-term formula as layer norm but along the other dimension: dx = 1/N * rstd * (N*g - "
        "sum(g) - xhat * sum(g*xhat)) with the sums over the batch, because the statistics depend on "
        "every example. dbeta is the sum of dy over the batch, dgamma the sum of dy times xhat. At "
        "evaluation the running stats are constants. PyTorch keeps the running var with Bessel's n - 1.",
        "The key thing is that the batch statistics are functions of all the inputs, they aren't "
        "constants, so the gradient flows through them. Consequence: the columns of dx sum to 0. "
        "Evaluation swaps in the running average of the mean and variance, and that's also why a "
        "single example batch can't be used for training.",
        "mu = mean over N, var = biased mean over N; dxhat = dy * gamma; dx = rstd * (dxhat - "
        "mean_N(dxhat) - xhat * mean_N(dxhat * xhat)); dgamma = sum_N(dy * xhat), dbeta = sum_N(dy); "
        "the column sums of dx are 0 (the mean over N couples every example); running_var uses the "
        "unbiased N/(N-1) estimate; eval uses the running stats; N = 1 gives var = 0, refused.",
    ],
    'adamw_step': [
        "Adam keeps two moving averages, m and v, that start at zero, so early on they're biased "
        "towards zero; you divide by one minus beta to the power t to correct that. AdamW applies the "
        "weight decay directly to the weights rather than adding it to the gradient, where Adam's "
        "normalisation would rescale it. Epsilon is added after taking the square root of v. You "
        "usually don't decay biases or LayerNorm gains. In mixed precision the optimizer updates an "
        "fp32 master copy and casts back to bf16, and if the gradients overflowed the step is skipped "
        "without touching m and v. Memory is 16 bytes per parameter: 2 for the weights, 2 for the "
        "grads, 12 for the fp32 copy and the two moments, and ZeRO shards those across GPUs.",
        "Bias correction: m_hat = m / (1 - beta1^t), v_hat = v / (1 - beta2^t), because both start "
        "at zero. Decoupled decay: w -= lr * wd * w, separately from the adaptive update, so it's not "
        "scaled by 1/sqrt(v). The update is m_hat / (sqrt(v_hat) + eps), eps outside the sqrt. Keep "
        "fp32 master weights. ZeRO stage 1 shards the optimizer state, stage 2 the gradients too, "
        "stage 3 the parameters.",
        "The moments are initialised at zero, so without the one minus beta correction the first steps "
        "are tiny. In plain Adam the L2 term goes through the gradient and gets normalised away for "
        "parameters with big gradients; AdamW decouples it. On an inf or NaN from the loss scaler you "
        "skip that step. Exclude norm weights and biases from the decay with a mask.",
        "m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; w = w - lr * (m / (1 - b1^t)) / (sqrt(v / "
        "(1 - b2^t)) + eps) - lr * wd * w on an fp32 master copy (eps outside the sqrt, the decay "
        "decoupled from g, masked off for biases and norms; an overflow skips the step); 2 + 2 + 12 "
        "bytes per parameter, sharded by ZeRO.",
    ],
    'bptt': [
        "You unroll the RNN over time and run ordinary backprop. The same weight matrices are used at "
        "every step, so their gradients are summed over all the time steps. The gradient of the hidden "
        "state at step t has two parts: from the output at t and from h at t + 1 through W_hh. Through "
        "tanh you multiply by 1 - h^2 using the saved output. For a 10,000-step sequence you use "
        "truncated BPTT: carry the hidden state forward but detach it every k steps so backprop only "
        "goes k steps back. Because you multiply by W_hh again and again, gradients vanish or explode "
        "depending on its largest singular value; for exploding ones clip the total norm over all the "
        "gradients.",
        "Walk backwards in time. dW_hh accumulates h_{t-1} dh_raw at each step, same for W_xh and the "
        "bias. The hidden state's gradient carries back to the previous step. The derivative of tanh "
        "is one minus the output squared. Long sequences: chunk it, detach between chunks. Exploding "
        "gradients: clip by global norm.",
        "The recurrent weight is shared across time, just like a conv filter is shared across "
        "positions, so add up every step's contribution, and the hidden state's gradient flows back "
        "from the next step too. Long chains vanish because the Jacobian product shrinks when W_hh's "
        "largest singular value is below one, and can explode above it. Train long sequences in chunks, "
        "detaching the state between them. Clip all the gradients together, not each tensor on "
        "its own, so the direction is kept.",
        "dh_t = W_hy^T dy_t + W_hh^T da_{t+1}; da_t = dh_t * (1 - h^2) with h the tanh output; "
        "dW_hh = sum over t of da_t h_{t-1}^T; the product of W_hh^T terms explodes or vanishes; "
        "truncate by detaching h every k steps; scale all grads by max_norm / total_norm when the "
        "global norm exceeds it.",
    ],
    'maxpool_kernel': [
        "With a scatter, each output thread adds its dout into the input at its argmax. When the "
        "windows overlap, two threads can hit the same input element, and a plain += is a "
        "read-modify-write race, so one update gets lost. You need atomicAdd, but then the order of the "
        "additions changes from run to run and the floating-point result isn't bit-for-bit "
        "reproducible. The other way is a gather: one thread per input that loops over the windows "
        "covering it and sums the ones whose argmax is that input; deterministic, no atomics. In both, "
        "check the index against the size because the last block has threads past the end.",
        "Scatter needs atomics because overlapping windows collide on the same input; without them "
        "you lose updates. Atomics make it nondeterministic. I'd ship the gather, which assigns each "
        "input its own thread and sums over its windows, and I'd bounds-check every thread.",
        "Two threads writing one element is a race. atomic add fixes it but the summation order "
        "varies, so results vary in the last bits. Gather is deterministic. Guard with if i < n.",
        "scatter: atomicAdd(dx[argmax[o]], dout[o]) for every output o, since windows overlap; "
        "gather: dx[i] = sum over windows w covering i of dout[w] * (argmax[w] == i), one thread per "
        "input, deterministic; guard i < size for the last block.",
    ],
}

# Wrong answers as candidates say them: each must hit fewer than half of the key points.
WRONG = {
    'batchnorm_backward': [
        "Treat the batch mean and variance as constants, so dx is just dy times gamma over the "
        "standard deviation, the same as at inference.",
        "BatchNorm has no real backward, it's just a scale and shift; use a bigger learning rate.",
    ],
    'adamw_step': [
        "Adam with weight decay is the same as AdamW; just add lambda times w to the gradient and "
        "use a smaller learning rate.",
        "Run everything in bf16 to save memory, the optimizer doesn't care about precision.",
    ],
    'bptt': [
        "Only the last step matters, so take the gradient at the final time step and use a bigger "
        "learning rate.",
        "Use an LSTM instead and the problem goes away; I'd also add dropout.",
    ],
    'maxpool_kernel': [
        "Write dx[argmax] = dout in one thread per output; the GPU handles the ordering for you.",
        "Copy the gradient to every element of the window, that is the derivative of max.",
    ],
}
