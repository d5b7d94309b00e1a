"""Answers to the interview of question 27 as candidates say them, written without the notebook
open, in three styles (terse, rambling, formula-heavy): correct ones, which must hit most key
points, and wrong ones, which must hit fewer than half (tests/learner/test_keypoints.py)."""

PARAPHRASES = {
    'tensor_parallel_linear': [
        # terse
        "W1 is split by columns, so each GPU gets the full input and owns a slice of the hidden "
        "units; GeLU is elementwise, so it runs locally, no communication. W2 is split by rows: each "
        "GPU gets a partial sum of the output, and an all-reduce adds them up in the forward. Add the "
        "bias once, after the reduce. Backward: the output gradient is replicated already, so the "
        "row layer's backward needs no communication; dx at the first layer is a sum over ranks, so "
        "one all-reduce there. Weight gradients stay local to each shard.",
        # rambling
        "Okay so in Megatron the first linear is column-parallel, meaning every rank has all of X and "
        "a chunk of the columns of A, so it can compute its own part of the hidden layer and apply "
        "the activation locally, nothing to communicate. The second linear is row-parallel, so each "
        "rank multiplies its hidden chunk by its rows of B and you get partial sums, and you need an "
        "all-reduce in the forward to add those partial sums together, and the bias you add once, "
        "after the all-reduce, otherwise you'd add it P times. In the backward pass it's reversed, "
        "the gradient coming into the row-parallel layer is already there on every rank so that "
        "backward needs no communication, and the gradient with respect to the input X of the "
        "column-parallel layer needs an all-reduce, since each rank only has its own contribution. "
        "And the weight gradients just stay local on each rank.",
        # formula-heavy
        "Column-parallel first: Y_i = gelu(X A_i), nonlinearity runs locally, no communication. "
        "Row-parallel second: Z = sum_i Y_i B_i, so the forward all-reduces the partial sums; b added "
        "once, after the all-reduce. Backward: dZ already on every rank, so the row-parallel backward "
        "needs no communication; dX = sum_i dY_i A_i^T, so the input gradient needs an all-reduce. "
        "Weight gradients stay local: dA_i = X^T dY_i. f: identity fwd, all-reduce bwd; g: the reverse.",
    ],
}

WRONG = {
    'tensor_parallel_linear': [
        "You shard both weight matrices, all-gather the activations after every layer so each GPU "
        "has the full hidden state, and in the backward you all-reduce all the gradients like in "
        "data parallel training.",
        "Both layers are split by rows; each GPU adds its bias and then we sum everything; in the "
        "backward every gradient gets summed across GPUs, the weight gradients included.",
    ],
}
