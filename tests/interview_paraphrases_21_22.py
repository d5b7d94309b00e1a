"""Answers to the interviews of questions 21 and 22 as candidates say them, written without the
notebooks open: three correct ones per question in different styles (terse, rambling, formula-
heavy), which must hit most key points, and wrong ones, which must hit fewer than half
(tests/test_keypoints.py)."""

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
}

WRONG = {
    'residual_backward': [
        "Residual connections add more parameters and let the network reuse features, so it is more "
        "expressive. I would initialise with Xavier and use a smaller learning rate.",
        "Skip connections make the network shallower so it trains faster; initialise everything with "
        "a standard deviation of 0.01.",
    ],
}
