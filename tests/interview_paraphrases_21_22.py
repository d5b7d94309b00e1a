"""Answers to the interviews of questions 21 and 22 as candidates say them, written without the
notebooks open: three correct ones per question in different styles (terse, rambling, formula-
heavy), which must hit most key points, and wrong ones, which must hit fewer than half
(tests/learner/test_keypoints.py)."""

PARAPHRASES = {
    'residual_backward': [
        # terse
        "Skip path: dL/dh_l = dL/dh_{l+1} + J_F^T dL/dh_{l+1}, so the gradient reaches every layer "
        "unchanged through the identity. No skip: a product of Jacobians, vanishes or explodes. Blocks "
        "start near the identity; zero-init the last layer. Smoother loss landscape. He init: "
        "variance 2 / fan because ReLU keeps half; fan_out keeps the backward's variance, fan_in the "
        "forward's. Xavier with ReLU halves the variance each layer.",
        # rambling
        "So the way I think about it, a residual block is x plus F of x, and when you backprop through "
        "that the identity part just hands the gradient from above straight down, unchanged, so even "
        "the very first layer of a hundred-layer net gets a decent gradient. If you take the skip away "
        "you're multiplying Jacobian after Jacobian and the thing vanishes, or explodes if the gains "
        "are above one. There's also the initialisation angle: every block starts out close to the "
        "identity, so the deep network behaves like a shallow one at the start and each block only "
        "learns a correction, and people zero-init the last layer to make that exact. And there's "
        "that paper showing the loss landscape is much smoother with skips. For the weights, Kaiming: "
        "ReLU zeroes half the units so you need variance two over the fan; fan_out if you care about "
        "the backward pass, fan_in for the forward. Xavier was meant for tanh and with ReLU it loses "
        "half the variance at every layer.",
        # formula-heavy
        "h_{l+1} = h_l + F(h_l) => dh_l = dh_{l+1} + J_l^T dh_{l+1}; dh_0 = prod_l (I + J_l^T) dout "
        "contains dout itself (the identity passes it unchanged), while without the skip dh_0 = "
        "prod_l J_l^T dout, a product of Jacobians that vanishes or explodes. Init: F ~ 0 so each block "
        "starts near the identity. Smoother loss surface. Var(dh) = fan_out Var(W) Var(dz) / 2 => "
        "Var(W) = 2 / fan_out keeps the backward's variance (fan_in for the forward); Xavier's "
        "2 / (fan_in + fan_out) halves it at every ReLU layer.",
    ],
    'training_symptoms': [
        # terse
        "New layer, random init: it changes the function, so the loss jumps at that step. Fix: "
        "start it as the identity, last layer or a ReZero gain at zero; the gain still gets a "
        "gradient. Reading runs: initial loss vs ln C; NaN at step 0 with a huge first loss is init, "
        "NaN with normal gradients is log(0), NaN after hundreds of steps is fp16 overflow; a loss "
        "that is too smooth is the same batch repeated; train improves but validation doesn't, "
        "BatchNorm is still in training mode.",
        # rambling
        "Okay so the first thing I'd check is the step where the layer went in, because if the loss "
        "jumps right there it's not an optimisation problem at all, it's that the fresh layer with its "
        "random init changed the function the network computes. The standard fix is to make the new "
        "block start near the identity, so zero-init its last layer or put a LayerScale gain in front "
        "of it at zero, and that's fine because the gain still gets a gradient and learns from the "
        "first step. For debugging runs in general I look at the initial loss against log of the "
        "number of classes, and at when the NaN shows up: right at step 0 it's the init or a log of "
        "zero somewhere in the loss, after hundreds of good steps it's usually a float16 overflow. A "
        "curve that goes down too smooth, with none of the usual minibatch noise, means the loader "
        "is feeding the same batch. And if training looks normal but validation never improves, "
        "someone forgot model.eval() and BatchNorm is in training mode.",
        # formula-heavy
        "out = h + g * F(h); with g = 0, out = h, so the new block starts as the identity; dgain = "
        "sum_n dout * F(h) != 0, so the gain still gets a gradient; adding it with random init "
        "changes the function: loss(t_add) >> loss(t_add - 1), a jump. Initial loss vs ln C (ln 10 = "
        "2.3). NaN at step 0 and loss_0 >> ln C: init scale; NaN at step 0, |grad| ~ 1: 0 * log 0 in "
        "the loss; first NaN after hundreds of steps: fp16 overflow past 65504. P(loss_t+1 > loss_t) "
        "~ 0 means too smooth, one batch repeated; train down, val flat: BatchNorm in training mode.",
    ],
}

WRONG = {
    'residual_backward': [
        "Residual connections add more parameters and let the network reuse features, so it is more "
        "expressive. I would initialise with Xavier and use a smaller learning rate.",
        "Skip connections make the network shallower so it trains faster; initialise everything with "
        "a standard deviation of 0.01.",
    ],
    'training_symptoms': [
        "A deeper model is harder to optimise, so lower the learning rate and train for longer; if the "
        "loss is NaN, lower the learning rate again.",
        "Add more regularisation: dropout and weight decay, and use early stopping on the validation set.",
    ],
}
