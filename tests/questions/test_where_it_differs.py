"""Every failing comparison of arrays says where (issue 38, item 3): for each question, an answer with a mistake no trap describes (one entry of one output off by 0.5)
gets feedback that names the position, the values and by how much, names no trap, and hints
that start from that difference instead of asserting some other mistake."""
import re

import pytest

from backprop_traps.grader.engine.trap_feedback import from_difference
from backprop_traps.grader.loading.questions import solution_notebooks
from conftest import graded_in_process

PERTURB = '''
import numpy as _np


def _perturbed(value):
    """The answer with the first entry of its first float array 0.5 too large (an int + 1)."""
    if isinstance(value, _np.ndarray) and value.dtype.kind == "f" and value.size:
        value = value.copy()
        value.flat[0] += 0.5
        return value, True
    data = getattr(value, "data", None)  # a tape engine's Tensor (custom_function)
    if isinstance(data, _np.ndarray) and data.dtype.kind == "f" and data.size and not isinstance(value, _np.ndarray):
        import copy as _copy
        value = _copy.copy(value)
        value.data = data.copy()
        value.data.flat[0] += 0.5
        return value, True
    if isinstance(value, dict):
        out, done = dict(value), False
        for key in value:
            if not done:
                out[key], done = _perturbed(value[key])
        return out, done
    if isinstance(value, (list, tuple)):
        out, done = [], False
        for item in value:
            if not done:
                item, done = _perturbed(item)
            out.append(item)
        return type(value)(out), done
    if isinstance(value, int) and not isinstance(value, bool):
        return value + 1, True
    return value, False


_right_{fn} = {fn}


def {fn}(*args, **kwargs):
    return _perturbed(_right_{fn}(*args, **kwargs))[0]
'''
# the function made wrong in each question (one that returns arrays, or a number)
WRONG = {"routing_trap": "maxpool2d_backward", "per_step_update_trap": "conv1d_backward",
         "vram_trap": "mlp_loss_and_grads", "softmax_ce": "softmax_cross_entropy",
         "mlp_backprop": "mlp_backward", "tape_autodiff": "tape_backward",
         "forward_vs_reverse": "chain_vjp", "straight_through": "fake_quant_backward",
         "training_memory": "activation_bytes", "attention_backward": "attention_backward",
         "layernorm_backward": "layernorm_backward", "loss_scaling": "clip_grad_norm",
         "grad_accumulation": "mlp_grads", "reparameterisation": "pathwise_grad",
         "batchnorm_backward": "batchnorm_backward", "backprop_ninja": "ninja_backward",
         "adamw_step": "adamw_step", "gradient_clinic": "update_ratios", "bptt": "rnn_backward",
         "maxpool_kernel": "maxpool2d_backward_gather", "residual_backward": "residual_backward",
         "training_symptoms": "gated_block_backward", "custom_function": "hvp",
         "memory_budget": "rev_backward",
         "ddp_accumulation": "linear_grads",
         "rmsnorm_rope_backward": "rmsnorm_backward",
         "moe_router_backward": "router_backward",
         "weight_tying": "tied_lm_backward",
         "embedding_backward": "embedding_backward",
         "tensor_parallel_linear": "column_parallel_backward",
         }
SAYS_WHERE = [
    re.compile(r"The largest difference is at \[[\d, ]+\] \([^)]*\): expected \S+, yours \S+, off by [+-]"),
    re.compile(r"`[^`]+` is \S+, expected \S+: off by [+-]"),
    re.compile(r"Wrong: grads\[\d+\]"),                                   # tape_autodiff: which input
    re.compile(r"\w+\([^)]*\) returned [\d,]+ B .*expected [\d,]+ B"),    # training_memory: which call
]


def test_every_question_is_covered():
    assert set(WRONG) == set(solution_notebooks())


@pytest.mark.parametrize("question", list(WRONG))
def test_an_unnamed_mistake_is_told_where(question):
    fn = WRONG[question]
    result = graded_in_process(question, PERTURB.format(fn=fn))
    failed = [t for t in result.tests if not t.passed]
    assert failed and result.score < result.max_score
    assert not [t.trap for t in failed if t.trap], [(t.name, t.trap, t.feedback[:300]) for t in failed]
    located = [t for t in failed if any(p.search(t.feedback) for p in SAYS_WHERE)]
    assert located, [(t.name, t.feedback[:300]) for t in failed]
    for t in located:
        if from_difference(t, t.feedback):  # hints start from the difference, never another mistake
            assert t.hints[0].startswith("Start from"), (t.name, t.hints)


def test_the_bptt_example_of_the_issue_shows_the_smallest_input_and_where():
    """hs[t - 1] wraps to the last state at t = 0: no trap, but one step already shows it."""
    snippet = (
        "def rnn_backward(dhs, x, h0, hs, W_xh, W_hh, k):\n"
        "    T = x.shape[0]\n"
        "    dx, dW_xh, dW_hh = np.zeros_like(x), np.zeros_like(W_xh), np.zeros_like(W_hh)\n"
        "    db, carry = np.zeros(W_hh.shape[0]), np.zeros_like(h0)\n"
        "    for t in reversed(range(T)):\n"
        "        dz = (dhs[t] + carry) * (1.0 - hs[t] ** 2)\n"
        "        dW_xh += x[t].T @ dz\n"
        "        dW_hh += hs[t - 1].T @ dz\n"
        "        db += dz.sum(axis=0)\n"
        "        dx[t] = dz @ W_xh.T\n"
        "        carry = dz @ W_hh.T\n"
        "        if t > 0 and t % k == 0:\n"
        "            carry = np.zeros_like(h0)\n"
        "    return dx, dz @ W_hh.T, dW_xh, dW_hh, db\n")
    result = graded_in_process("bptt", snippet)
    weights = next(t for t in result.tests if t.name.startswith("dW_xh, dW_hh and db"))
    assert not weights.passed and weights.trap is None
    assert "The smallest input where yours is still wrong (T = 1, N = 1)" in weights.feedback, weights.feedback
    assert "`dW_hh` differs at" in weights.feedback and "The largest difference is at [" in weights.feedback
    hints = " ".join(weights.hints).lower()
    assert "every step" not in hints and "never assign" not in hints and "sum" not in hints, weights.hints


def test_hints_for_an_unnamed_mistake_follow_what_differs_and_never_repeat_the_title():
    """Issue 51: question 21's ReLU mask taken as z >= 0 got three generic hints, the third the
    check's title, and the title gave the answer. Now each hint quotes what differs: the entry
    and its two values, the entries that share the difference and what is special about the input."""
    from conftest import ANSWERS
    result = graded_in_process("residual_backward", (ANSWERS / "residual_backward" / "wrong_relu_mask_at_zero.py").read_text())
    (kink,) = [t for t in result.tests if not t.passed]
    assert kink.trap is None and len(kink.hints) == 3
    assert not any(kink.name in hint for hint in kink.hints)
    where = re.search(r"`([^`]+)` differs at [^\n]*The largest difference is at \[([\d, ]+)\] \([^)]*\): "
                      r"expected (\S+), yours ([^\s,]+)", kink.feedback)
    assert f"`{where[1]}[{where[2]}]` should be {where[3]}, yours is {where[4]}" in kink.hints[0], kink.hints
    assert kink.hints[1].startswith("Only ") and "pre-activations exactly 0 in places" in kink.hints[1]
    assert "(of 0 to" not in kink.hints[1]


@pytest.mark.parametrize("got, want, words", [(0.2, 0.1, "off by +0.1 (100% of the expected value)"),
                                              (1.1, 1.0, "off by +0.1 (10% of the expected value)"),
                                              (3.0, 1.0, "off by +2 (2 times the expected value)"),
                                              (1.0, 1.0005, "(0.05% of the expected value)")])
def test_a_relative_difference_reads_as_a_share(got, want, words):
    """Issue 51: "off by +0.1, 1 of the expected value" read oddly."""
    import numpy as np
    from backprop_traps.grader.engine.feedback import locate
    assert words in locate("x", np.array(got), np.array(want), rtol=0, atol=0)


@pytest.mark.parametrize("axis, words", [("entry", "only in entries 0 and 2 (of 0 to 3)"),
                                         ("batch", "only in batches 0 and 2"),
                                         ("row", "only in rows 0 and 2"),
                                         ("example n", "only in example n = 0 and 2")])
def test_axis_names_take_english_plurals(axis, words):
    """A 1-D mask's differences read "only in entrys 0, 1" (vram_trap): plurals are English."""
    import numpy as np
    from backprop_traps.grader.engine.feedback import locate
    got, want = np.array([1.0, 0.0, 1.0, 0.0]), np.zeros(4)
    assert words in locate("x", got, want, axes=(axis,), rtol=0, atol=0)


def test_a_small_examples_matrix_rows_line_up():
    """"A small example:" printed a matrix's later rows at the margin, under nothing."""
    import numpy as np
    from backprop_traps.grader.engine.context import CheckContext
    text = CheckContext.example(None, {"z": np.arange(2.0)}, np.eye(2), -np.eye(2))
    lines = text.splitlines()
    expected_at = next(i for i, line in enumerate(lines) if "expected: [[" in line)
    assert lines[expected_at + 1].index("[") == lines[expected_at].index("[[") + 1, text
    got_at = next(i for i, line in enumerate(lines) if "got:      [[" in line)
    assert lines[got_at + 1].index("[") == lines[got_at].index("[[") + 1, text
