"""Answers to the interviews of questions 23 and 24 as candidates say them, written without the
notebooks open, in three styles each (terse, rambling, formula-heavy): correct ones, which must
hit most key points, and wrong ones, which must hit fewer than half (tests/learner/test_keypoints.py)."""

PARAPHRASES = {
    'custom_function': [
        # terse
        "Save x for the backward, not the output: x squared has lost the sign. backward() accumulates "
        "into .grad, hence zero_grad; autograd.grad just returns the gradients and doesn't touch "
        ".grad. Backward returns one gradient per input, a vector-Jacobian product. HVP: create_graph "
        "on the first grad, then the gradient of its dot product with v.",
        # rambling
        "So a custom Function has a forward and a backward, and in the forward you stash whatever the "
        "backward needs in ctx. For squaring, you'd be tempted to keep the output, but honestly you "
        "want to save the input x, because if you only have y you'd take a square root and get the "
        "absolute value, so the sign is gone for negative inputs. The backward gives back one gradient "
        "per input, it's really a vector-Jacobian product. Then loss.backward() versus autograd.grad: "
        "backward adds the result into the .grad of the leaves, it accumulates, that's why you zero "
        "grad between steps, and autograd.grad is functional, it returns the gradients without "
        "touching .grad. And for a Hessian-vector product I'd call grad with create_graph=True so the "
        "backward pass is itself recorded, then differentiate again, the gradient dotted with v.",
        # formula-heavy
        "y = x^2, ctx.save_for_backward(x); dx = 2 x * dy (sqrt(y) = |x| would flip the sign for x < 0). "
        "backward(): leaf.grad += g, accumulates; autograd.grad(L, x) returns g and leaves .grad alone. "
        "backward = VJP, one gradient per input. Hv = grad(<grad(f, x, create_graph=True), v>, x): "
        "double backward, so every backward must be differentiable.",
    ],
    'memory_budget': [
        # terse
        "Checkpoint and recompute what you drop, selectively: keep what's expensive to recompute per "
        "byte, like matmul outputs, recompute softmax and dropout. Under a budget that's a 0/1 "
        "knapsack, solve it with dynamic programming, greedy isn't optimal. Reversible blocks "
        "reconstruct their inputs from the outputs. Offload over PCIe only if the copies overlap "
        "compute. Shrinking the batch raises the gradient variance, sigma^2 / B.",
        # rambling
        "Well, the activations are what blow up memory, so the classic thing is activation "
        "checkpointing, where you throw some away and recompute them in the backward. You can be "
        "selective about it, keep the stuff that's expensive to recompute and recompute the cheap "
        "big things like the attention softmax, and if you have a hard memory budget that's "
        "basically a knapsack problem, you'd do dynamic programming. There are also reversible "
        "networks, RevNet style, where each block can rebuild its input from its output so you don't "
        "store anything per layer. Or you offload to CPU memory, but PCIe is like 30 GB/s against "
        "terabytes per second of HBM, so you need the copies to overlap with compute. And I'd be "
        "careful about just dropping the batch size, because the variance of the gradient goes like "
        "sigma squared over B.",
        # formula-heavy
        "min sum_{i not in K} c_i s.t. sum_{i in K} s_i <= B: a 0/1 knapsack, best[m] = max(best[m], "
        "best[m - s_i] + c_i), recompute the rest (selective: keep high c_i per byte). RevNet: y1 = x1 "
        "+ F(x2), y2 = x2 + G(y1), so x2 = y2 - G(y1), x1 = y1 - F(x2): reconstruct the inputs. "
        "Offload: t = 2n / 30 GB/s over PCIe vs 3 TB/s HBM, step = max(compute, t) only with overlap. "
        "Var(g) = sigma^2 / B.",
    ],
}

WRONG = {
    'custom_function': [
        "Keep the output to save memory and take the square root in the backward; backward and "
        "autograd.grad are the same thing.",
        "Just use torch's autograd, you never need to write a backward yourself, and second "
        "derivatives are too expensive anyway.",
    ],
    'memory_budget': [
        "Use batch size 1 and buy a bigger GPU; memory is the only thing the batch size affects.",
        "Run everything in fp16 and checkpoint every single layer, that always fixes it.",
    ],
}
