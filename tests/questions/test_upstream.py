"""A mistake upstream is never blamed downstream (issue 38, item 1). Where a question's
function builds on another of the learner's (the solution's own code says which: grader/engine/
upstream.py), a wrong upstream function under a right downstream one must not give the
downstream function's checks a trap's name or a dtype diagnosis: they say that a reference
built from the learner's own upstream function agrees with the downstream answer.

Questions with no such structure (every function stands alone): routing_trap, softmax_ce,
mlp_backprop, straight_through, attention_backward, layernorm_backward, batchnorm_backward,
backprop_ninja, bptt, training_symptoms (diagnose reads a trace; the gated block stands alone).
custom_function's hvp differentiates the learner's own grad: its check compares hvp with
central differences of that gradient when grad is wrong. maxpool_kernel's kernels call the device helper unravel4, which the grader
cannot replay outside a GPU launch: its checks grade the kernels through the host functions.
"""
import numpy as np
import pytest

from backprop_traps.grader.engine.upstream import dependencies_of
from backprop_traps.grader.loading.questions import solution_notebooks
from conftest import ANSWERS, graded_in_process

# (question, the upstream function made wrong, the downstream function that calls it)
CASES = [
    ("per_step_update_trap", "conv1d_output_length", "conv1d_forward"),
    ("vram_trap", "relu_backward_packed", "mlp_loss_and_grads"),
    ("tape_autodiff", "op_backward", "tape_backward"),
    ("tape_autodiff", "op_forward", "tape_forward"),
    ("forward_vs_reverse", "chain_jvp", "jacobian_forward"),
    ("forward_vs_reverse", "chain_vjp", "jacobian_reverse"),
    ("training_memory", "dtype_bytes", "activation_bytes"),
    ("loss_scaling", "clip_grad_norm", "amp_step"),
    ("loss_scaling", "unscale_grads", "amp_step"),
    ("grad_accumulation", "mlp_grads", "accumulated_grads"),
    ("reparameterisation", "pathwise_grad", "variance_ratio"),
    ("adamw_step", "adamw_step", "mixed_precision_step"),
    ("gradient_clinic", "relative_error", "diagnose"),  # 1e6 times too large: see FACTOR
    ("residual_backward", "residual_backward", "gradient_norms"),
    ("memory_budget", "rev_backward", "revnet_loss_and_grads"),
    ("custom_function", "grad", "hvp"),
    ("ddp_accumulation", "linear_grads", "ddp_grads"),
    ("rmsnorm_rope_backward", "rope_forward", "rope_backward"),
    ("weight_tying", "tied_lm_backward", "tied_lm_train"),
    ("tensor_parallel_linear", "column_parallel_backward", "mlp_backward"),
]
FACTOR = {"relative_error": 1e6}  # 1.5 times a tiny error is still tiny: diagnose would not change
NO_STRUCTURE = {"routing_trap", "softmax_ce", "mlp_backprop", "straight_through", "attention_backward",
                "layernorm_backward", "batchnorm_backward", "backprop_ninja", "bptt", "training_symptoms"}

BUMP = '''
import numpy as _np


def _bump(value):
    """The right answer, made wrong: its first number or float array {factor} times too large (an int + 1)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, _np.ndarray) and value.dtype.kind == "f":
        return (value * {factor}).astype(value.dtype)
    data = getattr(value, "data", None)  # a tape engine's Tensor (custom_function)
    if isinstance(data, _np.ndarray) and data.dtype.kind == "f":
        import copy as _copy
        value = _copy.copy(value)
        value.data = (data * {factor}).astype(data.dtype)
        return value
    if isinstance(value, (list, tuple)) and value:
        return type(value)([_bump(value[0]), *value[1:]])
    if isinstance(value, float):
        return value * {factor}
    if isinstance(value, int):
        return value + 1
    return value


_right_{fn} = {fn}


def {fn}(*args, **kwargs):
    return _bump(_right_{fn}(*args, **kwargs))
'''


def test_the_cases_cover_every_question_with_that_structure():
    structured = {q for q, path in solution_notebooks().items() if dependencies_of(path)}
    assert structured == {q for q, _, _ in CASES} | {"maxpool_kernel"}
    assert not structured & NO_STRUCTURE
    for question, upstream, downstream in CASES:
        assert upstream in dependencies_of(solution_notebooks()[question])[downstream]


@pytest.mark.parametrize("question, upstream, downstream", CASES)
def test_a_wrong_upstream_function_is_never_blamed_on_the_downstream_one(question, upstream, downstream):
    result = graded_in_process(question, BUMP.format(fn=upstream, factor=FACTOR.get(upstream, 1.5)))
    failed = [t for t in result.tests if not t.passed]
    about_downstream = [t for t in failed if f"from {downstream}" in t.feedback or f"compares {downstream}" in t.feedback]
    assert about_downstream, [(t.name, t.feedback[:200]) for t in failed]
    for t in about_downstream:
        assert t.trap is None, (t.name, t.trap, t.feedback)
        assert "contract wants" not in t.feedback, t.feedback
        assert upstream in t.feedback, (t.name, t.feedback)
    told = " ".join(t.feedback for t in about_downstream)
    assert f"Fix {upstream}" in told, told
    assert (f"Built from your own {upstream} instead, the reference gives exactly what your {downstream}" in told
            or f"With it, your {downstream} did not answer" in told), told
    assert all(upstream in t.hints[0] for t in about_downstream if f"Fix {upstream}" in t.feedback)


def test_the_issues_example_float32_is_what_the_contract_wants():
    """adamw_step wrong (no bias correction): the mixed-precision checks never say "float32 where
    the contract wants float64", and say adamw_step is the function to fix."""
    result = graded_in_process("adamw_step", (ANSWERS / "adamw_step" / "no_bias_correction.py").read_text())
    mixed = [t for t in result.tests if not t.passed and "mixed_precision_step" in t.feedback
             and "adamw_step: its answer" not in t.feedback]
    assert len(mixed) == 2
    for t in mixed:
        assert "float64" not in t.feedback and t.trap is None
        assert "mixed_precision_step is right as it is" in t.feedback


def test_a_float32_constant_in_the_contracts_float32_step_is_not_called_a_dtype_mistake():
    """The issue's second case: v is float32 as the contract wants, but 1 - beta2 was formed in float32."""
    snippet = '''
def mixed_precision_step(master, grad16, m, v, t, lr, beta1, beta2, eps, weight_decay, decay):
    g = grad16.astype(np.float32)
    if not np.all(np.isfinite(g)):
        return master.copy(), master.astype(np.float16), m.copy(), v.copy(), t
    t = t + 1
    b1, b2 = np.float32(beta1), np.float32(beta2)
    m = b1 * m + (np.float32(1) - b1) * g
    v = b2 * v + (np.float32(1) - b2) * g * g
    m_hat, v_hat = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
    master = master * (1 - lr * weight_decay) if decay else master
    master = (master - lr * m_hat / (np.sqrt(v_hat) + eps)).astype(np.float32)
    return master, master.astype(np.float16), m.astype(np.float32), v.astype(np.float32), t
'''
    result = graded_in_process("adamw_step", snippet)
    failed = [t for t in result.tests if not t.passed]
    assert failed, "a float32 1 - beta2 is off by about 1e-5 of v: more than rounding"
    for t in failed:
        assert "contract wants float64" not in t.feedback and t.trap is None, t.feedback
    assert any("as the contract says" in t.feedback for t in failed), [t.feedback for t in failed]


def test_the_contracts_dtypes_are_declared_as_the_question_page_says():
    from backprop_traps.grader.checks import load_question
    from conftest import REPO
    adamw = load_question("adamw_step")
    page = (REPO / "docs" / "questions" / "adamw_step.md").read_text()
    assert "Dtypes: float32, float16, float32,\n  float32, int." in page
    assert [adamw.contract_dtype("mixed_precision_step", n) for n in ("master", "weight16", "m", "v", "t")] == [
        "float32", "float16", "float32", "float32", "int"]
    assert adamw.contract_dtype("adamw_step", "m") == "float64"
    assert load_question("bptt").contract_dtype("rnn_backward", "dx") == "float64"
    got = np.zeros(3, dtype=np.float32)
    from backprop_traps.grader.engine.context import low_precision
    assert low_precision("v", got, "f", wants="float32") is None
    assert "wants float32" in low_precision("v", got.astype(np.float16), "f", wants="float32")
