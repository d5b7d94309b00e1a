# question: per_step_update_trap
# base: solution
# Issue 43, class 3: an upstream function's answer that sizes the grader's own work. The forward
# is wrong (no bias) and works out its own length; conv1d_output_length returns __LENGTH__. When
# the forward's check fails, the grader replays the reference's conv1d_forward on the learner's
# conv1d_output_length (engine/upstream.py): once, in the grader's process, with this as a size.


def conv1d_output_length(length, kernel_size, stride, padding):
    return __LENGTH__


def conv1d_forward(x, w, b, stride, padding):
    N, C_in, L = x.shape
    C_out, _, K = w.shape
    L_out = (L + 2 * padding - K) // stride + 1
    x_pad = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
    out = np.zeros((N, C_out, L_out))
    for k in range(K):
        taps = slice(k, k + stride * (L_out - 1) + 1, stride)
        out += np.einsum("oc,nct->not", w[:, :, k], x_pad[:, :, taps])
    return out
