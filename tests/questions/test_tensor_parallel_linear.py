"""tensor_parallel_linear graded end to end: the question is sound (`grade validate
tensor_parallel_linear --quick`: the solution at full marks, the stub at 0, every answer in
tests/answers/tensor_parallel_linear/ as its name or `# expect:` line says, the count of
all-reduces taken through the real sandbox, no free points), the reference agrees with PyTorch's
autograd on one device, and the grader's collective takes any input the child can send with
one clear refusal and counts only what it summed. The kernels have their own test.
"""
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.checks.tensor_parallel_linear import collective, probes, traps
from backprop_traps.grader.loading.reference import load_solution

ROOT = Path(__file__).resolve().parents[2]
QID = "tensor_parallel_linear"


def test_tensor_parallel_linear_is_sound():
    report = validate_question(QID, ROOT, quick=True)
    assert report.ok, report.text()


@pytest.mark.parametrize("P", [1, 2, 4])
def test_the_reference_is_the_one_device_block_by_torch_autograd(P):
    torch = pytest.importorskip("torch")
    ref = load_solution(QID)
    rng = np.random.default_rng(P)
    (x, W1, b1, W2, b2), args = probes.mlp_block(rng, P, 3, 5, 8)
    dout = rng.standard_normal((3, 5))
    t = [torch.tensor(a, requires_grad=True) for a in (x, W1, b1, W2, b2)]
    out = torch.tanh(t[0] @ t[1] + t[2]) @ t[3] + t[4]
    out.backward(torch.from_numpy(dout))
    for copy in ref.mlp_forward(*args):
        np.testing.assert_allclose(copy, out.detach().numpy(), rtol=1e-12, atol=1e-12)
    dx, dW1, db1, dW2, db2 = ref.mlp_backward([dout] * P, *args[:4])
    for r in range(P):
        np.testing.assert_allclose(dx[r], t[0].grad.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(db2[r], t[4].grad.numpy(), rtol=1e-10, atol=1e-12)
    for got, want, axis in ((dW1, t[1], 1), (db1, t[2], 0), (dW2, t[3], 0)):
        np.testing.assert_allclose(np.concatenate(got, axis=axis), want.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_the_trap_forms_are_what_their_mistakes_compute():
    rng = np.random.default_rng(0)
    P = 3
    (x, W, b), (x_ranks, W_shards, _) = probes.column_layer(rng, P, 2, 4, 6)
    dy = [rng.standard_normal((2, 2)) for _ in range(P)]
    forms = traps.column_dx_forms(dy, W_shards)
    whole = np.concatenate(dy, axis=1) @ W.T
    np.testing.assert_allclose(sum(forms["dx-not-all-reduced"]), whole)
    np.testing.assert_allclose(forms["double-all-reduce"][1], P * whole)
    (x, W, b), (x_shards, W_shards, _) = probes.row_layer(rng, P, 2, 6, 4)
    np.testing.assert_allclose(traps.row_out_forms(x_shards, W_shards, b)["bias-on-every-rank"][2], x @ W + P * b)


ARRAYS = hnp.arrays(st.sampled_from([np.float64, np.float32, np.int64, np.bool_, np.complex128]),
                    hnp.array_shapes(min_dims=0, max_dims=3, max_side=4),
                    elements={"allow_nan": False, "allow_infinity": False, "min_value": -5, "max_value": 5})
SENT = st.one_of(st.lists(ARRAYS, max_size=6), st.lists(st.one_of(ARRAYS, st.integers(), st.text(max_size=3),
                                                                  st.none()), max_size=4),
                 ARRAYS, st.integers(), st.none(), st.text(max_size=5))


@settings(max_examples=150, deadline=None)
@given(sent=SENT, ranks=st.sampled_from([None, 1, 2, 3]))
@example(sent=[np.array(0.0)] * 3, ranks=3)  # 0-d: a sum of numpy scalars is no array unless kept one
def test_the_collective_sums_or_refuses_in_one_sentence(sent, ranks):
    counter = collective.AllReduce()
    if ranks is not None:
        counter.begin(ranks)
    try:
        result = counter.all_reduce(sent)
    except ValueError as refusal:
        assert str(refusal) and "\n" not in str(refusal)
        assert counter.calls == 0 and counter.take_learner_tally() == 0
        return
    assert counter.calls == 1 and counter.take_learner_tally() == 1 and counter.take_learner_tally() == 0
    want = sum(a.astype(np.float64) for a in sent)
    assert len(result) == len(sent) and all(np.array_equal(copy, want) for copy in result)
    assert result[0] is not result[-1] or len(result) == 1
    if ranks is not None:
        assert counter.came_from_sums(result)


def test_only_the_collectives_own_sums_count_as_its_output():
    counter = collective.AllReduce()
    counter.begin(2)
    parts = [np.arange(6.0).reshape(2, 3), np.ones((2, 3))]
    summed = counter.all_reduce(parts)
    bias = np.array([0.5, -1.0, 2.0])
    assert counter.came_from_sums(summed) and counter.came_from_sums([s + bias for s in summed], bias)
    assert not counter.came_from_sums([s + 1e-3 for s in summed])
    assert not counter.came_from_sums([parts[0] + parts[1] + 1.0])
    assert not counter.came_from_sums([None]) and not counter.came_from_sums(["x"])
    assert not counter.came_from_sums([s + 2 * bias for s in summed], bias)
    alone = collective.AllReduce()
    alone.begin(2)
    inside = alone.all_reduce([parts[0] + bias, parts[1]])  # the bias in the sum, on rank 0 only
    assert alone.came_from_sums(inside, bias), "a bias that went into the one sum is from the sum"
    counter.end()
    assert not counter.came_from_sums(summed), "a graded call's sums are forgotten when it ends"


def test_the_grader_never_keeps_more_than_its_bound():
    counter = collective.AllReduce()
    counter.begin(2)
    big = [np.ones(collective.AllReduce.MAX_ELEMENTS // 2) for _ in range(2)]
    for _ in range(40):
        counter.all_reduce(big)
    assert counter.kept <= collective.AllReduce.MAX_KEPT_BYTES and counter.calls == 40
    with pytest.raises(ValueError):
        counter.all_reduce([np.ones(collective.AllReduce.MAX_ELEMENTS) for _ in range(2)])


def test_a_sum_past_float64s_range_is_inf_without_a_warning():
    """The grader's sum of 1e308 on every rank is inf, as on a GPU, and prints nothing of the
    grader's (a RuntimeWarning names its file, above the learner's report)."""
    import warnings
    counter = collective.AllReduce()
    counter.begin(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = counter.all_reduce([np.full(4, 1e308)] * 3)
    assert np.all(np.isinf(out[0]))
