"""Answers to each question's interview as candidates say them, in words that are not the
notebook's: six correct ones (the last in formulas), which must hit most key points, and wrong
ones, which must hit fewer than half (tests/learner/test_keypoints.py)."""

PARAPHRASES = {
    'routing_trap': [
        "Max pooling's backward has to send the gradient to whichever element was the largest in the "
        'window, everything else gets zero. The inference kernel throws away that location, so in training'
        ' you need to store the argmax indices during the forward. If windows overlap you must add the '
        'contributions rather than overwrite them, and for ties pick the first max.',
        "The gradient of max is one-hot: only the winner of each window gets dout. The fast kernel doesn't"
        " remember which position won, so backward can't do it. Save the index per output. Overlapping "
        'windows mean one input can win twice, so accumulate with atomics.',
        'Backward needs to know where the max came from; the inference path never kept it. Cache the '
        'positions, route each upstream gradient only to the max element, use += when strides are smaller '
        'than the kernel, and break ties consistently, say the first occurrence. Avg pooling is different,'
        ' it just divides by k squared and spreads evenly.',
        'Max pooling is only differentiable through the element that was selected. During backprop the '
        'upstream gradient has to flow back to exactly that position and zero elsewhere. The inference '
        'kernel just outputs the pooled value and discards the location, so we need a training kernel that'
        ' also returns a mask or the indices of the maxima. With overlapping windows, one input can be the'
        ' max of two windows, so we sum. If two values are equal, we choose one deterministically.',
        "So the issue is the backward pass doesn't know where the maximum was. You need to record the "
        'argmax in the forward. Then dx is zeros except at the recorded locations where you put dout, '
        'adding when windows overlap.',
        "Max isn't smooth, its gradient is a selector: 1 for the argmax in the window, 0 for the rest. The"
        ' inference kernel only writes pooled values, it never records which element was the max, so '
        'backprop has no way to send gradients to the right place and the conv layers below get garbage. '
        'Training kernel: also emit the argmax per output (or keep the input to recompute it), scatter-add'
        ' dout into those positions since windows can share a winner, and use a fixed tie-break.',
    ],
    'per_step_update_trap': [
        'The kernel weights are reused at every time step, so the weight gradient has to be the sum of the'
        ' contributions from all positions and all examples. The loop is overwriting dw at each step, so '
        'only the last position counts. Accumulate instead; the bias gradient also needs summing. Check it'
        ' against a numerical gradient.',
        "It's a weight-sharing bug: each position's window contributes to dW and you need to add them up, "
        "plus sum across the batch. Right now it's assigning, so you keep the final window only. Raising "
        "the learning rate won't help because the gradient itself is wrong.",
        'Same weights used everywhere means dw = sum over n and t of dout times the input window. The code'
        " replaces instead of +=, so it's basically one window's gradient. I'd confirm with finite "
        'differences, and db should sum over positions too.',
        'Because the convolution uses the same filter at every position, dL/dw is the total of the per-'
        'position gradients. If the loop does dw = something at each step it keeps only the final one. '
        "Change it to dw += and also sum across the minibatch. The bias gets the same treatment. I'd "
        'verify with a numerical gradient check.',
        'The weights are tied across time, so gradients must accumulate over all output positions, like '
        'backprop through time in RNNs. The current code overwrites, which is why the loss barely moves; '
        "tuning the learning rate can't fix a wrong gradient.",
        'dW should be sum_t dout_t ⊗ x_window_t, summed over the batch too. Writing dW = ... inside the '
        "loop throws away all but the last term. So the update only reflects one time step. It's the "
        'classic shared-parameter rule: gradients of tied weights add. Fix with accumulation and confirm '
        'with gradcheck.',
    ],
    'vram_trap': [
        'In training you have to hold on to the intermediate activations of every layer for the backward '
        'pass, and that grows with batch size times number of layers. Fix it with activation '
        'checkpointing: store only some layers and recompute the others during backward, roughly sqrt(L) '
        'memory, at the cost of an extra forward, about 30% slower. Also store ReLU masks as bits, and use'
        ' gradient accumulation with micro-batches.',
        'Inference frees each activation right away; training keeps them all because backprop needs them, '
        "plus gradients and Adam's moments. Trade compute for memory: gradient checkpointing, "
        'rematerialize segments in the backward. It costs one more forward pass. Pack ReLU masks to one '
        'bit per element.',
        'Most of the memory is saved activations, proportional to batch times depth. Checkpoint every '
        'sqrt(L) layers and recompute, which is roughly a third more compute. Optimizer state is 16 bytes '
        'per parameter with mixed precision Adam. If still too big, micro batches with gradient '
        'accumulation keep the same effective batch.',
        'During inference you can discard activations after each layer, but backprop needs the stored '
        'activations from the forward pass, which scale with batch size and number of layers. Use gradient'
        ' checkpointing: save activations only at some layers and recompute the rest during the backward '
        'pass. With sqrt(n) checkpoints memory goes to O(sqrt n) at the cost of roughly one extra forward '
        'pass. Also store the ReLU mask as a bit mask.',
        'Activations dominate. Recompute instead of store: activation checkpointing cuts memory to about 2'
        ' sqrt(L) layers at the cost of ~33% more compute. Plus micro-batching with gradient accumulation,'
        ' and the Adam state is another 12 bytes per parameter.',
        'Training has to keep the forward activations around until the backward pass uses them; inference '
        "doesn't. That memory is linear in depth and batch. Solution: recompute activations during "
        'backward from periodic checkpoints; with k = sqrt(L) you store about 2 sqrt(L) activations. Cost '
        'is a second forward, ~33% more time. Store relu masks as bits rather than floats.',
    ],
    'softmax_ce': [
        'Write the loss as logsumexp of the logits minus the correct logit; the derivative of logsumexp is'
        ' softmax, so the gradient is softmax minus the one-hot vector, divided by the batch size for a '
        'mean. For stability subtract the max logit before exponentiating and compute log-softmax directly'
        ' instead of taking log of p.',
        'dL/dz = p - y. You get it from the chain rule: the softmax Jacobian is diag(p) - p p^T and the '
        "p's cancel. To avoid overflow, shift by the largest logit. Average over N.",
        'The gradient is the probabilities minus the label, so subtract 1 at the correct class. '
        'Numerically: subtract the row maximum so exp never overflows, and use the log-sum-exp trick for '
        "the loss so a tiny probability doesn't give log(0) = -inf.",
        'The loss is -log softmax_y(z) = -z_y + log sum_j exp(z_j). Differentiating gives softmax(z)_j '
        'minus 1 if j == y. In code: subtract the max from each row, compute exp, normalize; the gradient '
        'is probs with 1 subtracted at the label, divided by the batch size. Compute the loss as log-sum-'
        'exp minus the correct logit, so no log of zero.',
        'Gradient = softmax(z) - onehot(y), averaged over the batch. For numerical stability shift logits '
        "by their max so exponentials don't overflow, and compute the log-probabilities with the logsumexp"
        ' trick rather than log(softmax).',
        'Let s = softmax(z). dL/dz_i = s_i - 1[i == y]. Derivation: L = -z_y + log Σ_j e^{z_j}, so the '
        'derivative of the second term is e^{z_i}/Σ e^{z_j} = s_i. Implementation: m = max(z); z - m; '
        'logsumexp; loss = lse - z_y; grad = softmax - onehot, then /N for the mean.',
    ],
    'mlp_backprop': [
        'Start with dout = (pred - y) / N. For the second layer, dW2 = h.T @ dout, db2 is dout summed over'
        ' the batch, and dh = dout @ W2.T. Through the ReLU, zero the gradient where z was negative. Then '
        "dW1 = x.T @ dz and db1 the sum over rows. I'd verify against finite differences.",
        'The weight gradient is the outer product of the layer input and the upstream gradient, summed '
        'over examples; the bias gradient sums over the batch dimension; to go down a layer multiply by '
        "the transposed weight matrix; the ReLU's derivative is 1 where the pre-activation is positive. "
        'Then check it numerically with central differences.',
        'Residual is out minus y over N. dW2 = h transpose times that, db2 = sum(axis=0), gradient to the '
        "hidden layer through W2 transpose, mask with z > 0, repeat for layer one. Shapes aren't enough, "
        "I'd run a gradient check.",
        'Forward: z1 = x W1 + b1, h = relu(z1), out = h W2 + b2. Backward: dout = (out - y)/N; dW2 = h^T '
        'dout; db2 = dout.sum(0); dh = dout W2^T; dz1 = dh * (z1 > 0); dW1 = x^T dz1; db1 = dz1.sum(0). To'
        ' convince you, compare against a finite-difference gradient check.',
        'Chain rule layer by layer: weight gradient is input transpose times upstream gradient, bias '
        'gradient is the upstream gradient summed across the batch, gradient w.r.t. the input is upstream '
        'times weight transpose, and ReLU backward masks out negative pre-activations. Then numerically '
        'check each parameter with central differences.',
        'g_out = (y_hat - y)/N; grad W2 = h^T g_out; grad b2 = column sums of g_out; g_h = g_out W2^T; g_z'
        ' = g_h where z > 0 else 0; grad W1 = X^T g_z; grad b1 = column sums of g_z. Verify with numerical'
        ' gradients on small square matrices.',
    ],
    'tape_autodiff': [
        'Go through the recorded ops in reverse order, which is a valid topological order. Each op has a '
        'local backward, a vector-Jacobian product. Keep a gradient per node initialised to zero, seed the'
        " output with 1, and add the contributions into the inputs' gradients, because a variable used in "
        'several places must sum its gradients.',
        "Reverse-mode: iterate the tape backwards, call each node's VJP and accumulate with += into the "
        "parents' grads, since fan-out means summing over paths. The forward has to store whatever values "
        'the backward needs.',
        'Initialise all grads to zero and the loss grad to one, then walk from the last operation to the '
        "first; for each operation apply the chain rule locally and add to each input's gradient rather "
        'than setting it, otherwise x * x gets half its gradient.',
        "Initialize a dict of gradients with zeros and set the output's gradient to one. Iterate over the "
        'tape in reverse. For each op, compute the local gradients for its inputs using the saved forward '
        "values and add them to those inputs' accumulated gradients. Reverse order guarantees all "
        'consumers are processed first, and accumulation handles variables used more than once.',
        'Reverse topological traversal, each node applies its VJP, and gradients are summed with += since '
        'a node can feed multiple children.',
        'backward(): grads = {node: 0}; grads[output] = 1; for node in reversed(tape): for each input, '
        'grads[input] += node.vjp(grads[node]). Reversed tape is a topological order so every consumer is '
        'done before its producer; += handles reuse.',
    ],
    'forward_vs_reverse': [
        'Forward mode computes Jacobian-vector products, one input direction at a time, so with ten '
        'million inputs you need ten million passes. Reverse mode computes vector-Jacobian products, one '
        "output at a time, and a scalar loss is one output, so one backward pass. Both are exact; it's "
        'just the order you multiply the Jacobians. Reverse needs memory for the activations. Forward is '
        'better when there are few inputs and many outputs.',
        "It's about which end of the chain you start from. JVP gives a column of the Jacobian per pass, "
        'VJP gives a row. Cost scales with the number of inputs for forward and the number of outputs for '
        "reverse. Forward mode doesn't store anything, so it wins for tall Jacobians or Hessian-vector "
        'products.',
        'Both modes are exact chain rule. Forward pushes a tangent through per input; backprop pulls a '
        'cotangent back per output, and the loss is a single output. Reverse pays by saving activations. '
        'Use forward when outputs outnumber inputs.',
        'Forward mode propagates derivatives along with values, computing a Jacobian-vector product for '
        'one input direction per pass. To get the full gradient of a scalar with respect to 10M parameters'
        " you'd need 10M passes. Reverse mode computes a vector-Jacobian product and gets the whole "
        'gradient of one scalar output in a single backward pass, but it must store intermediate values. '
        'Forward mode is better when the number of outputs is much larger than the number of inputs.',
        "It's the associativity of the chain of Jacobian products: multiply from the input side (forward) "
        'or from the output side (reverse). Cost is proportional to input dimension for forward and output'
        ' dimension for reverse. Forward uses no extra memory; reverse stores activations. Pick forward '
        'for few inputs, many outputs.',
        'Forward mode: each pass computes J times a tangent vector, giving one column; n inputs means n '
        'passes. Reverse mode: each pass computes a cotangent times J, one row; a scalar loss needs one '
        'pass. Same exact derivatives. Reverse must keep intermediates. If the function has few inputs and'
        ' many outputs, forward mode is cheaper.',
    ],
    'straight_through': [
        "Round has zero gradient almost everywhere, so you'd never learn. The straight-through estimator "
        'treats it as the identity in the backward, but only inside the representable range: where the '
        'input was clipped to qmin or qmax you pass zero. So the backward is dout times a mask of in-range'
        ' values, which needs x, not the output. It works since rounding error is bounded by half a step.',
        "The true derivative is zero, it's a step function. Use STE: pretend the quantizer is the identity"
        ' and copy the gradient through, except out of range where you clamp, there the gradient is '
        'blocked. You compute the mask from x / s between qmin and qmax.',
        'Pass the gradient straight through where qmin <= x/s <= qmax, zero outside because clipping '
        'really flattens the function. Basically you differentiate clip(x) as a surrogate. The rounding '
        'noise is small and unbiased so this is fine.',
        'The rounding function is piecewise constant, its derivative is zero almost everywhere, so '
        'gradients vanish. With STE we approximate the derivative as 1 in the backward pass, but we set it'
        ' to zero where the value was clipped outside the quantization range, since there the function '
        'really is flat. So grad_in = grad_out * (qmin <= x/s <= qmax).',
        'Round has no useful gradient. Treat round as identity for gradient purposes, i.e. straight-'
        'through, but mask the gradient outside the clamp range. You need the input or a boolean mask from'
        ' the forward to do that.',
        'round() is a staircase with zero derivative except at the jumps. STE: in the backward pretend the'
        ' quantizer is y = x, so dx = dy, but only where x was inside [s*qmin, s*qmax]; outside, the '
        "forward saturates and dx = 0. That's exactly the derivative of the clamp. It's fine because the "
        'rounding error is at most half a quantization step.',
    ],
    'training_memory': [
        "Per parameter: bf16 weights 2 bytes, bf16 gradients 2, an fp32 master copy 4, Adam's m and v in "
        "fp32 8, so 16 bytes, 112 GB for 7B, which doesn't fit on a single 80 GB card, so shard with FSDP."
        ' Then activations scale with batch and sequence length and the number of saved tensors per layer;'
        ' checkpointing trades recompute for that memory.',
        'Weights 14 GB, gradients 14, full precision master weights 28, optimizer moments 56: 112 GB '
        'before activations. You need ZeRO stage 3 or several GPUs. Activations depend on batch times seq '
        'times hidden times layers; use activation checkpointing, about sqrt of the depth.',
        'Mixed precision Adam costs sixteen bytes per param: 2 for weights, 2 for grads, 4 for the fp32 '
        'copy, 4 and 4 for the first and second moments. So 112 GB, more than one GPU holds. Plus '
        'activations, which grow with tokens in the batch; recompute them with checkpoints.',
        "Count bytes per parameter: with bf16 params and grads that's 4 bytes, fp32 master weights 4 more,"
        ' Adam first and second moments 8 more, total 16 bytes per parameter, so about 112 GB for 7B, '
        "before activations. That exceeds an 80GB GPU, so you'd use ZeRO/FSDP sharding across GPUs. "
        'Activations depend on batch size, sequence length, hidden size and layers, and can be cut with '
        'activation checkpointing.',
        '16 bytes per param: 2 weights, 2 grads, 4 master copy, 8 for Adam moments, 112GB total, need to '
        'shard over multiple GPUs. Then activations on top, proportional to batch*seq_len*hidden*layers; '
        'use gradient checkpointing.',
        'Model states: 2 (bf16 weights) + 2 (bf16 grads) + 4 (fp32 master) + 4 + 4 (Adam m, v) = 16 '
        "B/param → 112 GB for 7B. Doesn't fit on one 80 GB device: use ZeRO-3/FSDP to shard across GPUs. "
        'Activations come on top and scale with batch × sequence; reduce with activation recomputation.',
    ],
    'attention_backward': [
        'FlashAttention processes keys in blocks with an online softmax, keeping a running max and sum per'
        ' query row. It stores only the output and the log-sum-exp per row. In the backward it recomputes '
        'the attention probabilities tile by tile from the logsumexp, and uses the fact that rowsum(dP * '
        'P) equals rowsum(dO * O). The N x N matrix never goes to HBM, so it is actually faster because '
        'attention is memory-bound.',
        'It never materializes P. The forward keeps O and the softmax statistics (lse), O(N) memory. '
        'Backward: recompute S = QK^T for each tile, P = exp(S - lse), compute dV, dP, and dS = P * (dP - '
        'D) where D = rowsum(dO * O). Extra matmul but less memory traffic, so faster.',
        'Tile Q, K, V into SRAM, do a streaming softmax with rescaling. Save the logsumexp per row instead'
        ' of the probabilities. In the backward recompute each block of P exactly and get the softmax '
        "backward's row term from dO dot O. IO-aware, so it's faster.",
        'FlashAttention computes attention in blocks that fit in SRAM, using an online softmax with '
        "running max and normalizer. It doesn't write the NxN attention matrix to HBM; it stores only the "
        'output and the logsumexp statistics per row. In the backward it recomputes the attention scores '
        'block by block from Q, K and the saved statistics. The term rowsum(dP * P) is computed as '
        "rowsum(dO * O). It's faster because it's IO-bound, not compute-bound.",
        'Save the softmax normalization (log-sum-exp) per query, recompute P tile-wise in the backward, '
        'and use D = sum(dO ∘ O) for the softmax gradient. Memory is linear in sequence length.',
        "Don't keep P. Forward: tiled online softmax, keep m and l (or just lse) per row plus O. Backward:"
        ' recompute S and P per tile from Q, K and lse; dV = P^T dO; dP = dO V^T; D = rowsum(dO ∘ O); dS ='
        ' P ∘ (dP - D); dQ = dS K; dK = dS^T Q. No N² tensors in HBM, so memory is O(N) and it runs faster'
        " since it's bandwidth-bound.",
    ],
    'layernorm_backward': [
        "You can't treat the mean and variance as constants; they're functions of x. With g = dy * gamma "
        'and xhat the normalized input, dx = rstd * (g - mean(g) - xhat * mean(g * xhat)). dgamma = sum of'
        ' dy * xhat over the batch and dbeta = sum of dy. Sanity check: each row of dx sums to zero and '
        "it's orthogonal to xhat.",
        'Three paths: directly, through the mean, and through the variance. Subtract the average of the '
        'gradient and subtract x-hat times the average of gradient times x-hat, then scale by 1/sigma. The'
        ' result has zero mean over the features, since shifting the input changes nothing. The parameter '
        'gradients are sums over the batch.',
        'dbeta = dy.sum(0), dgamma = (dy * x_hat).sum(0). For dx the statistics depend on x too, so dx = '
        '(1/std) * (g - g.mean() - x_hat * (g * x_hat).mean()). The rows of dx sum to 0, a good test.',
        'The key is that mu and sigma are functions of x, so there are extra terms. dxhat = dy * gamma; dx'
        ' = (1/N) * rstd * (N*dxhat - sum(dxhat) - xhat * sum(dxhat * xhat)). dgamma = sum(dy * xhat), '
        'dbeta = sum(dy). You can sanity check that dx sums to zero across the feature dimension.',
        'Gradient through normalization has to include the dependence of the mean and variance on the '
        'inputs: you end up projecting out the mean and the component along x-hat. So dx = rstd times (g '
        'minus its mean minus x-hat times the mean of g times x-hat). Result is orthogonal to the ones '
        'vector and to x-hat.',
        "Normalize: xhat = (x - mu) / sigma. Because mu and sigma are computed from x, dx isn't just g / "
        'sigma. dx = (1 / sigma) (g - mean(g) - xhat · mean(g ⊙ xhat)) with g = dy ⊙ gamma. dgamma = '
        'Σ_batch dy ⊙ xhat, dbeta = Σ_batch dy. Checks: dx sums to zero along the feature axis and is '
        'orthogonal to xhat.',
    ],
    'loss_scaling': [
        "Scale the loss up so small fp16 gradients don't underflow, backward, then unscale the gradients "
        'by dividing by the scale before clipping. Check for infs or NaNs; if there are any, skip the step'
        ' and reduce the scale by half. Otherwise clip by the global norm of the unscaled gradients and '
        'step. After enough steps without overflow, double the scale.',
        'scaler.scale(loss).backward(), scaler.unscale_(optimizer), clip_grad_norm_ on the real gradients,'
        ' scaler.step, scaler.update. Unscaling first matters because otherwise you clip gradients that '
        'are 65536 times too big. Overflow means skip and back off the scale; a long run of good steps '
        'means grow it.',
        'Multiply the loss by S to keep tiny gradients representable, divide by S afterwards, detect '
        "inf/nan, and if found don't update and lower the scale. If fine, clip the true gradient using one"
        ' norm over all parameters, then update; increase the scale every 2000 clean steps.',
        'Multiply the loss by the scale factor, backward, then call unscale_ to divide the gradients by '
        'the scale. Check for inf/NaN: if found, skip optimizer.step and decrease the scale factor by 2x. '
        'Otherwise clip the unscaled gradients by total norm, step, and after a number of successful steps'
        ' increase the scale. Clipping before unscaling would clip against a huge norm.',
        'Order: scaled backward, unscale, check overflow, clip, step, update scale. On overflow skip the '
        'step and back off the scale; every N good steps grow it. Loss scaling exists so small gradients '
        "don't flush to zero in fp16.",
        'fp16 gradients underflow, hence scaling the loss by S. Steps: (1) backward on S·loss, (2) unscale'
        ' grads by 1/S, (3) if any grad is inf/nan skip this update and halve S, (4) else clip by global '
        'norm and optimizer.step(), (5) every 2000 good steps, S *= 2.',
    ],
    'grad_accumulation': [
        'Run 8 micro-batches of 64 and accumulate gradients, zeroing once and stepping once. Each micro-'
        "batch's summed loss should be divided by the total batch size, 512, so examples are weighted "
        'equally; dividing by 8 is only right if all micro-batches are the same size. For LMs normalize by'
        ' the number of tokens. Keep the accumulators in fp32. Memory is only one micro-batch of '
        'activations.',
        'The loss is a mean over all N examples, so scale each chunk by n_k / N and let backward add into '
        'the .grad buffers; one optimizer step at the end. If the last chunk is smaller, averaging per '
        'chunk and dividing by K weights examples unequally. With padding, count real tokens.',
        'Accumulate over micro batches, weight each by its fraction of the full batch, step once. Uneven '
        'batches break the divide-by-steps rule. Use fp32 for the sums. Peak memory stays at a micro '
        "batch's activations.",
        "Accumulate gradients over 8 micro-batches, but normalize correctly: divide each micro-batch's sum"
        ' of losses by the total number of examples in the big batch, 512, so each example has weight '
        "1/512. Dividing each micro-batch mean by 8 only works if they're all equal size. For LLMs "
        'normalize by total tokens. Zero grads once, step once. Memory is that of a single micro-batch.',
        'Scale each micro-batch loss by its share of the full batch, n_i / N, call backward to accumulate,'
        ' step after the last one. Watch out for a smaller last batch and padding tokens. Keep grads in '
        'fp32.',
        'Goal: same gradient as B = 512. Zero grad once; for each micro-batch k compute sum of per-example'
        ' losses, multiply by 1/512, backward (grads add up); then optimizer.step(). This handles a '
        'smaller final micro-batch correctly, unlike dividing each mean by 8. Token-level losses: divide '
        'by total tokens across the batch. Activation memory = one micro-batch.',
    ],
    'reparameterisation': [
        'Use the reparameterization trick: sample eps from a standard normal and set z = mu + sigma * eps,'
        " so gradients flow to mu and sigma; dz/dmu = 1 and dz/dsigma = eps. That's the pathwise "
        "estimator. If z is discrete you can't do that, so use the score function / REINFORCE estimator, "
        'f(z) times grad log p, which has high variance, or a Gumbel-softmax relaxation with a '
        'temperature.',
        'Move the noise outside: z = mu + sigma*epsilon. Then backprop through z: gradient for mu is '
        "f'(z), for sigma f'(z) times epsilon. For categories use Gumbel-softmax, or the log-derivative "
        'trick, which works for non-differentiable f but is much noisier.',
        'Pathwise gradient via reparameterisation with eps ~ N(0, 1). Alternatively the likelihood ratio '
        'estimator, unbiased even for discrete variables but with higher variance, reduced with a '
        'baseline. For categorical, Gumbel-softmax with temperature tau.',
        'Write z = mu + sigma * epsilon with epsilon ~ N(0,1). Now the randomness is in epsilon, which '
        "doesn't depend on the parameters, so dz/dmu = 1 and dz/dsigma = epsilon and we can backprop. For "
        "discrete latents you can't reparameterize, so use the REINFORCE/score-function estimator, which "
        'is unbiased but has high variance, or the Gumbel-softmax relaxation with a temperature.',
        'Reparameterization trick for the Gaussian: pathwise gradients. For categorical: Gumbel-softmax, '
        'or score function with a baseline to reduce variance.',
        'z = μ + σ ε, ε ~ N(0, I). ∂z/∂μ = 1, ∂z/∂σ = ε: pathwise gradients, low variance. For discrete z:'
        ' REINFORCE, E[f(z) ∇ log p(z)], unbiased but high variance (use a baseline), or Gumbel-softmax '
        'with temperature τ as a continuous relaxation.',
    ],
    'backprop_ninja': [
        "I'd go layer by layer in reverse. For cross-entropy the gradient on the logits is probs minus "
        'the one-hot targets, over B. Because the output matrix is the embedding, E gets a gradient from '
        "the logits and one from the lookup, and I add them. For the lookup, I scatter-add demb into E's "
        'rows with np.add.at so duplicate tokens accumulate. Dropout: multiply by the mask and divide by '
        '1-p, same as forward. tanh backward uses 1 - h^2 where h is the tanh output. LayerNorm backward '
        "has the mean and variance terms since they depend on the input. I'd verify with a numerical "
        'gradient check.',
        'Start from the loss: d logits equals p minus y, divided by the batch size. The embedding and '
        'the unembedding share E, so its gradient is the sum of both contributions. Repeated token ids '
        'must be summed, not overwritten. The dropout backward applies the same mask and scale. The tanh '
        'derivative is one minus the output squared. For layernorm the statistics depend on x so you get '
        'extra terms. Then compare with finite differences.',
        'Softmax cross-entropy gives softmax minus the one-hot label, averaged. Going back through the '
        'output projection, which is tied to the input embedding, that matrix collects two gradients and '
        'you sum them. Inverted dropout scales by 1/(1-p) in the forward, so the backward reuses the '
        'same mask and the same 1/(1-p). For tanh you take one minus the output squared, which you '
        "cached. LayerNorm's mean and variance are functions of the input, so there are three terms, not "
        "one. The embedding lookup's backward is a scatter: tokens that appear twice accumulate.",
        "Every op's backward in reverse order. The logits gradient is probabilities minus one-hot over "
        'the batch. Weight tying means E is used twice, at the input and the output, so both gradients '
        "add. Dropout reuses the forward's mask, with the same scale. tanh: derivative from the output, "
        '1 minus out squared. The lookup backward is an index_add because the same token can appear at '
        "several positions. I'd gradcheck each piece against finite differences.",
        'Chain rule through each op with the cached activations. dlogits = (softmax - onehot)/B. The '
        'output layer shares weights with the embedding, so dE gets both paths summed. Repeated ids '
        'accumulate in dE. Dropout grad is the mask divided by 1 - p. tanh grad is 1 - h^2 from the '
        'output. LayerNorm: the mean and var depend on x. Verify against numerical gradients.',
        'dlogits = (p - y) / B; dz = dlogits @ E; dE = dlogits.T @ z + scatter-add(demb by idx) because '
        'E is tied; dh = dhdrop * mask / (1 - p); dhln = dh * (1 - h^2); dhpre = rstd * (g - mean(g) - '
        'xhat * mean(g * xhat)) since mean and var depend on hpre; check with finite differences.',
    ],
    'gradient_clinic': [
        "I'd track, for every layer, the norm of the gradient, of the weight update, and their ratio; "
        "updates should be ~1e-3 of the weights. If backprop gives zero but finite differences don't, "
        "the layer is detached from the graph. If there's a gradient yet the weights don't change, it's "
        "frozen or not in the optimizer. I'd run a gradient check using a relative error normalised by "
        'the norms. To catch bad init I look at how each layer scales activations: RMS out over RMS in. '
        "For BatchNorm, evaluate the same examples in different batches: if outputs change, it's still "
        'in train mode.',
        'Log the ratio of update size to parameter size for each layer, about one in a thousand. A layer '
        'with no gradient where the numerical gradient is nonzero is cut from the graph with detach. A '
        'parameter that gets gradients but never changes was left out of the optimizer. Compare backprop '
        'with finite differences using the norm of the difference over the larger norm. Check whether '
        "activations blow up or shrink layer to layer after initialization. In eval mode an example's "
        'prediction should not depend on the rest of the batch, otherwise batch norm is in training '
        'mode.',
        'Per layer: gradient norm, update norm, and update over weight norm. Healthy is around 1e-3; '
        'much bigger means the learning rate is too high. Zero gradient but a nonzero numeric gradient: '
        'something detached the branch. Gradient present but no update: frozen weights. A wrong backward '
        'shows up in a gradient check with a relative error. Exploding or vanishing init shows as the '
        "layer's gain, output rms over input rms. BatchNorm left in train mode makes eval outputs depend "
        'on the batch.',
        "I'd instrument each layer separately instead of one global number: grad norm, step size "
        'relative to the weights (about 1e-3), and a gradient check against finite differences with a '
        'relative error. A detached branch gives exactly zero gradient; a frozen parameter has a '
        "gradient but does not move. For initialization I compare each layer's output scale to its input "
        'scale, its gain. And I run eval on the batch whole and split in halves: if BatchNorm is in '
        'train mode the outputs change.',
        'Look layer by layer. The update-to-weight ratio tells you about the learning rate. No gradient '
        'where finite differences say there should be one means detach somewhere. A gradient with no '
        'step means the optimizer is missing that parameter. A relative error on a gradient check '
        'catches a stale in-place activation. Gains far from one mean exploding or vanishing init. Eval '
        'predictions that change with the batch mean batch norm is still training.',
        'Per layer: ratio = ||dW|| / ||W|| ~ 1e-3 (median >> 1e-3 means lr too large); grad == 0 and '
        'numeric grad != 0 means detached; grad != 0 and update == 0 means frozen; relative error = ||a '
        '- n|| / max(||a||, ||n||) > 1e-4 means a wrong backward; gain = rms(z) / rms(a) > 8 or < 1/8 '
        'means exploding or vanishing init; eval output that depends on the batch means batchnorm in '
        'train mode.',
    ],
}

# Wrong answers as candidates say them: each must hit fewer than half of the key points.
WRONG = {
    'routing_trap': [
        "It's a numerical precision issue; inference uses FP16 or INT8 quantization, so we should switch "
        'to FP32 for training.',
        'The learning rate is probably too high, and the pooling layer needs batch norm after it.',
    ],
    'per_step_update_trap': [
        'The learning rate is too low, increase it or use Adam with warmup.',
        'Probably vanishing gradients; add residual connections and normalization.',
    ],
    'vram_trap': [
        'Buy a bigger GPU or reduce the batch size until it fits.',
        "Use a smaller model or train in lower precision, that's all you can do.",
        'Get a bigger GPU or lower the batch size until it fits.',
    ],
    'softmax_ce': [
        "It's p minus y, and add a small epsilon inside the log to avoid log of zero.",
        'Use sigmoid instead and clip the logits to a reasonable range.',
        'Just use the formula p - y, take log of p with an epsilon so it never hits zero.',
    ],
    'mlp_backprop': [
        'If every gradient has the same shape as its parameter, the backward pass is correct.',
        'Just use numpy to compute things and print the loss to see it decreasing.',
    ],
    'tape_autodiff': [
        "Go through the nodes backwards and set each input's gradient to what the node returns.",
        "Call each op's forward again and use the output as the gradient.",
    ],
    'forward_vs_reverse': [
        'Forward mode is just finite differences, perturbing one parameter at a time, so it is approximate'
        ' and slow.',
        'Forward mode is never better; backprop is always preferable.',
    ],
    'straight_through': [
        'Use the straight-through estimator: pass the gradient through unchanged.',
        'Just use autograd on round, PyTorch handles it.',
    ],
    'training_memory': [
        'Seven billion parameters times two bytes is 14 GB, so one 80 GB GPU is plenty.',
        'Parameters times four bytes, 28 GB, fits easily on an A100.',
    ],
    'attention_backward': [
        'It is gradient checkpointing: the backward reruns the forward pass.',
        'It stores the attention matrix in fp16 to save memory, and uses sparse attention.',
    ],
    'layernorm_backward': [
        'dx = dy * gamma / sqrt(var + eps), treating the mean and variance as fixed.',
        'Just multiply dy by gamma, the normalization is a constant scale.',
        'dx is dy times gamma divided by the standard deviation.',
    ],
    'loss_scaling': [
        'Scale the loss, backward, clip_grad_norm_, then scaler.step and scaler.update.',
        'Clip the gradients first, then scale the loss, then step.',
        'Scale the loss, call backward, clip the gradients, then step and update the scaler.',
    ],
    'grad_accumulation': [
        'Eight micro-batches, divide each loss by 8, call backward each time, step after the eighth.',
        'Just call optimizer.step after every micro-batch with a learning rate divided by 8.',
        'Divide each loss by the number of accumulation steps and step at the end.',
    ],
    'reparameterisation': [
        "You can't backpropagate through a random sample, so z is treated as a constant.",
        'Sample z and stop the gradient; the KL term trains the encoder.',
        "You can't differentiate through sampling, so treat z as a constant.",
    ],
    'backprop_ninja': [
        "Just call loss.backward(); autograd handles everything, there's no reason to do it by hand.",
        'Chain rule through each layer; dE is the embedding gradient copied into the rows of idx, and '
        "tanh' is 1 - x squared of its input.",
    ],
    'gradient_clinic': [
        'Lower the learning rate and add gradient clipping until the loss stops being NaN.',
        'Watch the loss curve and the global gradient norm; if it spikes, clip it.',
    ],
}
