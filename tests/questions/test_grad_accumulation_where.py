"""A named mistake of accumulated_grads still says where the values differ (the trap's sentence
said what was wrong, never which entry nor by how much): mean-of-means and zeroed-in-loop, the
two ways a learner most often weighs or drops micro-batches."""
import pytest

from conftest import graded_in_process

WRONG = {
    "mean-of-means": '''
def accumulated_grads(params, x, y, micro_batch):
    k = -(-len(x) // micro_batch)
    acc = [np.zeros_like(p) for p in params]
    for s in range(0, len(x), micro_batch):
        for a, g in zip(acc, mlp_grads(params, x[s:s + micro_batch], y[s:s + micro_batch])):
            a += g / k
    return tuple(acc)
''',
    "zeroed-in-loop": '''
def accumulated_grads(params, x, y, micro_batch):
    for s in range(0, len(x), micro_batch):
        acc = [np.zeros_like(p) for p in params]
        part = slice(s, s + micro_batch)
        for a, g in zip(acc, mlp_grads(params, x[part], y[part])):
            a += g * len(x[part]) / len(x)
    return tuple(acc)
''',
}


@pytest.mark.parametrize("trap", list(WRONG))
def test_a_named_trap_says_where(trap):
    result = graded_in_process("grad_accumulation", "import numpy as np\n" + WRONG[trap])
    failed = [t for t in result.tests if not t.passed]
    assert failed and all(t.trap == trap for t in failed), [(t.name, t.trap) for t in failed]
    for t in failed:
        assert "The largest difference is at [" in t.feedback and "expected" in t.feedback, t.feedback


def test_the_relu_kink_says_where():
    from conftest import ANSWERS
    result = graded_in_process("grad_accumulation",
                               (ANSWERS / "grad_accumulation" / "relu_mask_at_zero.py").read_text())
    named = [t for t in result.tests if not t.passed and t.trap == "relu-mask-at-zero"]
    assert named
    for t in named:
        assert "The largest difference is at [" in t.feedback or "` is " in t.feedback, t.feedback
