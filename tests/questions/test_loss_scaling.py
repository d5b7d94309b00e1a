"""loss_scaling graded end to end: right answers (the solution, PyTorch's GradScaler and
clip_grad_norm_), each trap named, the stub; and the question is sound
(`grade validate loss_scaling --quick`; the kernels have their own test)."""
from pathlib import Path

import pytest

from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.engine.run import grade_path
from conftest import ANSWERS, REPO

ROOT = Path(__file__).resolve().parents[2]
TRAPS = ["clip-before-unscale", "per-tensor-norm", "step-on-inf", "tracker-not-reset",
         "clip-the-loss", "nan-not-checked", "unscale-in-fp16"]


def failures(result):
    return [(t.name, t.trap, t.feedback) for t in result.tests if not t.passed]


def test_loss_scaling_is_sound():
    report = validate_question("loss_scaling", ROOT, quick=True)
    assert report.ok, report.text()


def test_solution_gets_full_marks():
    result = grade_path(REPO / "solutions" / "12_loss_scaling.ipynb")
    assert result.error is None
    assert result.score == result.max_score > 0
    assert all(t.passed and t.trap is None for t in result.tests)


def test_stub_gets_zero_with_not_implemented_feedback():
    result = grade_path(REPO / "exercises" / "12_loss_scaling.ipynb")
    assert result.error is None and result.score == 0
    assert all("not implemented yet" in t.feedback for t in result.tests)


def test_torch_answer_gets_full_marks():
    pytest.importorskip("torch")
    result = grade_path(ANSWERS / "loss_scaling" / "torch_answer.py")
    assert result.score == result.max_score, failures(result)


@pytest.mark.parametrize("trap", TRAPS)
def test_each_trap_loses_points_and_is_named(trap):
    """Each trap's file is a complete answer of its own (every function, one mistake)."""
    result = grade_path(ANSWERS / "loss_scaling" / f"{trap.replace('-', '_')}.py")
    assert result.error is None and result.score < result.max_score
    named = {t.trap for t in result.tests if not t.passed}
    assert trap in named, failures(result)
    assert named <= {trap, None}, failures(result)


@pytest.mark.parametrize("trap, snippet", [
    ("clip-the-loss",  # the other form: the loss clamped at max_norm, whose gradient is then 0
     "_right_step = amp_step\n\n\n"
     "def amp_step(params, grads, loss, state, hparams):\n"
     "    keep = 1.0 if abs(loss) <= hparams['max_norm'] else 0.0\n"
     "    new_params, new_state, clipped, skipped = _right_step(\n"
     "        params, [keep * g for g in grads], loss, state, {**hparams, 'max_norm': 1e300})\n"
     "    return new_params, new_state, clipped, skipped\n"),
    ("tracker-not-reset",  # the counter counts the overflow as one more step
     "_right_update = update_scale\n\n\n"
     "def update_scale(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):\n"
     "    if found_inf:\n"
     "        return scale * backoff_factor, growth_tracker + 1\n"
     "    return _right_update(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval)\n"),
    ("unscale-in-fp16",  # divided in float16, then handed back as float64
     "def unscale_grads(scaled_grads, scale):\n"
     "    grads = [(g / np.float16(scale)).astype(np.float64) for g in scaled_grads]\n"
     "    return grads, not all(np.isfinite(g).all() for g in grads)\n"),
])
def test_other_forms_of_a_trap_are_named(answer_file, trap, snippet):
    result = grade_path(answer_file("loss_scaling", text=snippet))
    assert result.score < result.max_score
    assert trap in {t.trap for t in result.tests if not t.passed}, failures(result)


def test_an_in_place_sgd_update_loses_only_the_unchanged_check(answer_file):
    snippet = ("_right_step = amp_step\n\n\n"
               "def amp_step(params, grads, loss, state, hparams):\n"
               "    new_params, new_state, clipped, skipped = _right_step(params, grads, loss, state, hparams)\n"
               "    if not skipped:\n"
               "        for p, g in zip(params, clipped):\n"
               "            p -= hparams['lr'] * g\n"
               "    return new_params, new_state, clipped, skipped\n")
    result = grade_path(answer_file("loss_scaling", text=snippet))
    assert [t.name for t in result.tests if not t.passed] == ["inputs left unchanged"], failures(result)


def test_growing_one_step_late_is_explained(answer_file):
    snippet = ("def update_scale(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):\n"
               "    if found_inf:\n"
               "        return scale * backoff_factor, 0\n"
               "    if growth_tracker == growth_interval:\n"
               "        return scale * growth_factor, 0\n"
               "    return scale, growth_tracker + 1\n")
    result = grade_path(answer_file("loss_scaling", text=snippet))
    growth = next(t for t in result.tests if t.name.startswith("update_scale: the scale grows"))
    assert not growth.passed and "the scale grows now and the counter restarts at 0" in growth.feedback


def test_seed_replays():
    path = ANSWERS / "loss_scaling" / "tracker_not_reset.py"
    a, b = grade_path(path, seed=7), grade_path(path, seed=7)
    assert [t.to_json() for t in a.tests] == [t.to_json() for t in b.tests]
