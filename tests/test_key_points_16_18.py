"""Answers to the interviews of 16 backprop_ninja and 18 gradient_clinic as candidates say them,
in words that are not the notebooks': six correct ones each (the last in formulas), which must
hit most key points, and wrong ones, which must hit fewer than half. The same form as issue
22's corpus (tests/interview_paraphrases.py on the interview branch); the test runs once the
key-point matcher (grader/learner/keypoints.py) is in the kit, and skips before.
"""
import pytest

PARAPHRASES = {
    'backprop_ninja': [
        "I'd go layer by layer in reverse. For cross-entropy the gradient on the logits is probs minus the "
        "one-hot targets, over B. Because the output matrix is the embedding, E gets a gradient from the "
        "logits and one from the lookup, and I add them. For the lookup, I scatter-add demb into E's rows "
        "with np.add.at so duplicate tokens accumulate. Dropout: multiply by the mask and divide by 1-p, "
        "same as forward. tanh backward uses 1 - h^2 where h is the tanh output. LayerNorm backward has "
        "the mean and variance terms since they depend on the input. I'd verify with a numerical gradient "
        "check.",
        "Start from the loss: d logits equals p minus y, divided by the batch size. The embedding and the "
        "unembedding share E, so its gradient is the sum of both contributions. Repeated token ids must be "
        "summed, not overwritten. The dropout backward applies the same mask and scale. The tanh "
        "derivative is one minus the output squared. For layernorm the statistics depend on x so you get "
        "extra terms. Then compare with finite differences.",
        "Softmax cross-entropy gives softmax minus the one-hot label, averaged. Going back through the "
        "output projection, which is tied to the input embedding, that matrix collects two gradients and "
        "you sum them. Inverted dropout scales by 1/(1-p) in the forward, so the backward reuses the same "
        "mask and the same 1/(1-p). For tanh you take one minus the output squared, which you cached. "
        "LayerNorm's mean and variance are functions of the input, so there are three terms, not one. "
        "The embedding lookup's backward is a scatter: tokens that appear twice accumulate.",
        "Every op's backward in reverse order. The logits gradient is probabilities minus one-hot over the "
        "batch. Weight tying means E is used twice, at the input and the output, so both gradients add. "
        "Dropout reuses the forward's mask, with the same scale. tanh: derivative from the output, 1 minus "
        "out squared. The lookup backward is an index_add because the same token can appear at several "
        "positions. I'd gradcheck each piece against finite differences.",
        "Chain rule through each op with the cached activations. dlogits = (softmax - onehot)/B. The "
        "output layer shares weights with the embedding, so dE gets both paths summed. Repeated ids "
        "accumulate in dE. Dropout grad is the mask divided by 1 - p. tanh grad is 1 - h^2 from the "
        "output. LayerNorm: the mean and var depend on x. Verify against numerical gradients.",
        "dlogits = (p - y) / B; dz = dlogits @ E; dE = dlogits.T @ z + scatter-add(demb by idx) because E "
        "is tied; dh = dhdrop * mask / (1 - p); dhln = dh * (1 - h^2); dhpre = rstd * (g - mean(g) - xhat "
        "* mean(g * xhat)) since mean and var depend on hpre; check with finite differences.",
    ],
    'gradient_clinic': [
        "I'd track, for every layer, the norm of the gradient, of the weight update, and their ratio; "
        "updates should be ~1e-3 of the weights. If backprop gives zero but finite differences don't, the "
        "layer is detached from the graph. If there's a gradient yet the weights don't change, it's frozen "
        "or not in the optimizer. I'd run a gradient check using a relative error normalised by the norms. "
        "To catch bad init I look at how each layer scales activations: RMS out over RMS in. For BatchNorm, "
        "evaluate the same examples in different batches: if outputs change, it's still in train mode.",
        "Log the ratio of update size to parameter size for each layer, about one in a thousand. A layer "
        "with no gradient where the numerical gradient is nonzero is cut from the graph with detach. A "
        "parameter that gets gradients but never changes was left out of the optimizer. Compare backprop "
        "with finite differences using the norm of the difference over the larger norm. Check whether "
        "activations blow up or shrink layer to layer after initialization. In eval mode an example's "
        "prediction should not depend on the rest of the batch, otherwise batch norm is in training mode.",
        "Per layer: gradient norm, update norm, and update over weight norm. Healthy is around 1e-3; much "
        "bigger means the learning rate is too high. Zero gradient but a nonzero numeric gradient: "
        "something detached the branch. Gradient present but no update: frozen weights. A wrong backward "
        "shows up in a gradient check with a relative error. Exploding or vanishing init shows as the "
        "layer's gain, output rms over input rms. BatchNorm left in train mode makes eval outputs depend "
        "on the batch.",
        "I'd instrument each layer separately instead of one global number: grad norm, step size relative "
        "to the weights (about 1e-3), and a gradient check against finite differences with a relative "
        "error. A detached branch gives exactly zero gradient; a frozen parameter has a gradient but does "
        "not move. For initialization I compare each layer's output scale to its input scale, its gain. "
        "And I run eval on the batch whole and split in halves: if BatchNorm is in train mode the outputs "
        "change.",
        "Look layer by layer. The update-to-weight ratio tells you about the learning rate. No gradient "
        "where finite differences say there should be one means detach somewhere. A gradient with no step "
        "means the optimizer is missing that parameter. A relative error on a gradient check catches a "
        "stale in-place activation. Gains far from one mean exploding or vanishing init. Eval predictions "
        "that change with the batch mean batch norm is still training.",
        "Per layer: ratio = ||dW|| / ||W|| ~ 1e-3 (median >> 1e-3 means lr too large); grad == 0 and "
        "numeric grad != 0 means detached; grad != 0 and update == 0 means frozen; relative error = "
        "||a - n|| / max(||a||, ||n||) > 1e-4 means a wrong backward; gain = rms(z) / rms(a) > 8 or < 1/8 "
        "means exploding or vanishing init; eval output that depends on the batch means batchnorm in train "
        "mode.",
    ],
}

WRONG = {
    'backprop_ninja': [
        "Just call loss.backward(); autograd handles everything, there's no reason to do it by hand.",
        "Chain rule through each layer; dE is the embedding gradient copied into the rows of idx, and "
        "tanh' is 1 - x squared of its input.",
    ],
    'gradient_clinic': [
        "Lower the learning rate and add gradient clipping until the loss stops being NaN.",
        "Watch the loss curve and the global gradient norm; if it spikes, clip it.",
    ],
}


@pytest.mark.parametrize("question", sorted(PARAPHRASES))
def test_answers_in_other_words_hit_most_key_points_and_wrong_ones_fewer_than_half(question):
    keypoints = pytest.importorskip("grader.learner.keypoints")
    from grader.authoring import interview
    from grader.loading.questions import solution_notebooks
    source, _ = interview.read_notebook(solution_notebooks()[question])
    points, problems = keypoints.parse(source.split("**Key points.**")[1])
    assert not problems
    hits = [sum(keypoints.hits(points, answer)) for answer in PARAPHRASES[question]]
    assert all(2 * h > len(points) for h in hits) and sum(hits) / len(hits) >= 0.66 * len(points), hits
    assert all(2 * sum(keypoints.hits(points, answer)) < len(points) for answer in WRONG[question])
