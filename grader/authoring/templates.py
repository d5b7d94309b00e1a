"""The files ``grade new`` writes, as templates (``$qid``, ``$title``).

The solution notebook follows the stub layout (grader/authoring/stub_layout.py): the
question and conventions first, the derivation in cells tagged ``derivation``, the mistakes
in a cell tagged ``solution-only``. The scaffold is a working elementwise question, ``<id>_forward(x) -> out`` and
``<id>_backward(dout, x) -> dx``, with one example check, one trap (``sign-flipped``) and its
runnable wrong answer. Every line the author must write is marked ``SCAFFOLD:``;
``grade validate`` lists the marks that are left, one per line.
"""
from string import Template

MARKDOWN_INTRO = Template("""\
# $title

**The scenario.** SCAFFOLD: the story: who hits this bug, where, and why it matters.
This cell holds the question as asked, the shapes and conventions, and no derivation.""")

MARKDOWN_DERIVATION = """\
**Step 1.** SCAFFOLD: the derivation, one step per markdown cell tagged `derivation` (the stub
drops them; `grade reveal` shows them one at a time): the forward, then the backward it implies."""

SETUP = """\
# Setup (locked): the imports every later cell needs; numpy and the standard library only.
import numpy as np"""

MARKDOWN_TASK = """\
## The forward and its backward

SCAFFOLD: what the learner writes, and the one idea that makes the backward right."""

SOLUTION = Template('''\
# Solution cell: the forward directly above its backward; each body goes between the markers.
def ${qid}_forward(x):
    """SCAFFOLD: what the forward computes. x: (N, D). Returns out (N, D)."""
    # FILL ME IN (roughly 1 line)
    ### BEGIN SOLUTION
    raise NotImplementedError("SCAFFOLD: the forward's solution (and its size hint above)")
    ### END SOLUTION
    return out


def ${qid}_backward(dout, x):
    """SCAFFOLD: what the backward computes. dout, x: (N, D). Returns dx (N, D)."""
    # FILL ME IN (roughly 1 line)
    ### BEGIN SOLUTION
    raise NotImplementedError("SCAFFOLD: the backward's solution (and its size hint above)")
    ### END SOLUTION
    return dx''')

VISIBLE_TEST = Template("""\
# Visible test: small checks a learner can read (never hidden ones). SCAFFOLD: a hand-worked example.
x = np.array([[1.0, -2.0, 0.5]])
dout = np.array([[0.3, 0.1, -0.2]])
assert ${qid}_forward(x).shape == x.shape
assert ${qid}_backward(dout, x).shape == x.shape""")

MARKDOWN_TRAPS = """\
## The mistakes the grader names

- **sign-flipped**: the backward returns the gradient with the wrong sign."""

MARKDOWN_INTERVIEW = """\
## In the interview

**The question.** "SCAFFOLD: the interview, part by part, in your own words: this question as an interviewer asks it."

**The wrong answer.** "What most candidates say." Why it is wrong, in a sentence or two.

**The answer that gets you hired.** The spoken answer goes here: it says each key point, in at most about 120 words.

**What the interviewer is testing.** What the question is really about, in a sentence or two.

**Follow-ups.**
- *A follow-up an interviewer asks next?* Its short answer, with numbers where they exist.
- *Another follow-up?* Its short answer.

**Key points.**
- the spoken answer's first point, as a learner recognises it: answer + each key point; a synonym; two parts + that both appear
- a second point (4 to 7 in all): 120 words; at most + words; a formula in several spellings such as 1/sqrt(d)
- a third: answer + goes here; a choice|another choice; a concept in braces from grader/learner/glossary.py
- a fourth: key point + words; replace all four with the claims of the question's own answer"""

CHECKS = Template('''\
"""Hidden checks for $qid: $title.

SCAFFOLD: what the checks look for, in a line or two. Shapes: x (N, D), out (N, D).
The reference is the solution notebook (``ctx.ref``); the known-wrong variants below are
the traps, computed here on the same inputs so a wrong answer can be named. Each trap
has a runnable wrong answer in tests/answers/$qid/ that `grade validate` grades.
"""
from __future__ import annotations

from backprop_traps.grader.engine.gradcheck import upstream
from backprop_traps.grader.engine.question import Question, Trap

QUESTION = Question("$qid", "$title", traps=[
    Trap("sign-flipped", "Your backward returns the gradient with the wrong sign. The gradient "
         "points where the loss grows; check the sign of every term of your derivation."),
], difficulty="medium",  # easy, medium or hard: `grade list` shows it
   kinks={})  # every kink, tie or threshold {id: where}, each probed by a check with kinks=(id,)


# -- input generators ------------------------------------------------------------------
def inputs(rng, shape=(3, 4)):
    """float64 inputs; draw what your checks need (ties, huge values, edge shapes)."""
    return rng.standard_normal(shape)


# -- checks ------------------------------------------------------------------------------
@QUESTION.check("forward matches the reference", points=1, hints=(
    "Compute every element of the output from the same element of x.",
))
def forward_values(ctx):
    x = inputs(ctx.rng)
    out = ctx.call("${qid}_forward", x)
    ctx.expect_array("out", out, ctx.ref.${qid}_forward(x), "${qid}_forward")


@QUESTION.check("backward matches finite differences", points=2, hints=(
    "Differentiate the forward element by element, then multiply by the upstream gradient.",
))
def backward_gradcheck(ctx):
    x = inputs(ctx.rng)
    dout = upstream(ctx.rng, x.shape)  # random, never all-ones
    dx = ctx.call("${qid}_backward", dout, x)
    correct = ctx.ref.${qid}_backward(dout, x)
    ctx.expect_gradient("dx", dx, ctx.ref.${qid}_forward, x, dout, "${qid}_backward",
                        traps={"sign-flipped": -correct})
''')

TRAP_ANSWER = Template('''\
# expect: trap=sign-flipped
# Trap sign-flipped: the backward returns the gradient with the wrong sign.
_right_backward = ${qid}_backward


def ${qid}_backward(dout, x):
    return -_right_backward(dout, x)
''')

KERNELS = Template('''\
"""Numba CUDA kernels for $qid. SCAFFOLD: what they compute, in one line.

Run the tests under the Numba CUDA simulator (no GPU needed):
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_${qid}_kernels.py
or on a GPU without the variable. Shapes: x, dout, out, dx all (N, D); both kernels are
elementwise, one thread per element of the flattened arrays.
"""
import math  # noqa: F401  (device math: math.exp, math.tanh, ...)

import numpy as np

from backprop_traps.kernels.runtime.device import cuda  # numba.cuda, its simulator (launches checked) or numba-cuda-mlir

THREADS_PER_BLOCK = 64


# 1. forward: one thread per element
@cuda.jit
def forward_kernel(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i]  # SCAFFOLD: the forward of one element


# 2. backward: one thread per element, dout the upstream gradient
@cuda.jit
def backward_kernel(dout, x, dx):
    i = cuda.grid(1)
    if i < x.size:
        dx[i] = dout[i]  # SCAFFOLD: the backward of one element


def _launch(kernel, *arrays):
    """Flatten, copy to the device, one thread per element; the last array comes back."""
    flat = [cuda.to_device(np.ascontiguousarray(a).ravel()) for a in arrays]
    blocks = max((flat[0].size + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK, 1)
    kernel[blocks, THREADS_PER_BLOCK](*flat)
    return flat[-1].copy_to_host().reshape(np.shape(arrays[0]))


def ${qid}_forward(x):
    """out (N, D) from x (N, D)."""
    return _launch(forward_kernel, x, np.empty_like(x))


def ${qid}_backward(dout, x):
    """dx (N, D) from dout, x (N, D)."""
    return _launch(backward_kernel, dout, x, np.empty_like(x))
''')

KERNEL_TEST = Template('''\
"""The $qid kernels against the solution notebook's reference, under the simulator.

Loaded by path, so the same file works in this kit and in an instructor's own folder.
"""
import importlib.util
import os
from pathlib import Path

if os.environ.get("BACKPROP_TRAPS_REAL_GPU") != "1":  # before numba.cuda is imported
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from backprop_traps.grader.loading.reference import load_solution  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ref = load_solution("$qid", ROOT)
_spec = importlib.util.spec_from_file_location("kernels_$qid", ROOT / "kernels" / "$qid.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)


@pytest.mark.parametrize("seed, shape", [(0, (1, 1)), (1, (3, 5)), (2, (4, 70))])
def test_forward_and_backward_match_the_reference(seed, shape):
    rng = np.random.default_rng(seed)
    x, dout = rng.standard_normal(shape), rng.standard_normal(shape)
    np.testing.assert_allclose(kernels.${qid}_forward(x), ref.${qid}_forward(x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(kernels.${qid}_backward(dout, x), ref.${qid}_backward(dout, x),
                               rtol=1e-12, atol=1e-12)
''')

QUESTION_TEST = Template('''\
"""$qid is sound: full marks for the solution, 0 for the stub, every answer in
tests/answers/$qid/ gets what its `# expect:` line says, no free points (`grade validate
$qid --quick`; the kernels have their own test)."""
from pathlib import Path

from backprop_traps.grader.authoring.validate import validate_question

# the questions folder: the first one up that holds solutions/ (tests/ or tests/questions/)
ROOT = next(p for p in Path(__file__).resolve().parents if (p / "solutions").is_dir())


def test_${qid}_is_sound():
    report = validate_question("$qid", ROOT, quick=True)
    assert report.ok, report.text()
''')


INTERVIEW_CORPUS = Template("""\
# $qid: answers that test its key points

Read by `grade validate` against the key points of the solution notebook's interview cell
(docs/authoring.md, "The key points and their corpus"). Every answer but the paraphrases must
hit fewer than half of the key points; each paraphrase must hit at least 80%. These answers
fit the scaffold's placeholder key points: replace them with your question's own, and keep
one `## trap <id>` answer per mistake in the solution's list.

## keywords

Answer, key point, words, 120.

## negated

The spoken answer does not go here, and it never says a key point in words.

## trap sign-flipped

The backward returns the gradient with the wrong sign.

## paraphrase terse

The answer goes here: it says each key point in at most 120 words.

## paraphrase rambling

So basically the answer goes here, and it covers each key point, one after the other, using at
most about 120 words in total.

## paraphrase formulas

answer = each key point in at most 120 words; the answer goes here.
""")
