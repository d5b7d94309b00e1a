"""The mistakes custom_function names, and the wrong answers the grader computes to name them.

Each trap is recognised by what the learner's code does on the grader's own engine: a
``.grad`` that does not grow on a second ``backward()``, a ``.grad`` that ``grad()`` changed,
a Square gradient of ``2 |x| dy``, a Square backward whose result is not on the tape (or
does not reach x), a RoundSTE backward that passes nothing. The Hessian-vector product of a
Square whose backward is not on the tape is computed by running the solution with that one
class replaced (``harness``), the same trusted code as the reference.
"""
from __future__ import annotations

import functools

from backprop_traps.grader.engine.question import Trap

TRAPS = [
    Trap("grad-overwritten", "backward() replaces a leaf's .grad instead of adding to it. Like "
         "PyTorch's, backward() accumulates: a second call adds the same gradient again (twice the "
         "value), and a .grad that is already there is added to, never thrown away; zero it "
         "yourself between steps.",
         symptom="After a second backward(), or onto a .grad that was already set, the leaf holds "
                 "one call's gradient: the earlier value was replaced, not added to."),
    Trap("functional-mutates-grad", "grad() changed a tensor's .grad. The functional call returns "
         "the gradients and leaves every .grad as it was (torch.autograd.grad does not touch "
         ".grad): computing them by calling backward() and reading .grad adds onto what was "
         "there and leaves the result behind.",
         symptom="grad() changed the .grad of a tensor; the functional call must leave every .grad "
                 "as it found it."),
    Trap("saved-output-root", "Square's backward recovers x from the saved output as sqrt(y), "
         "which loses x's sign: the gradient comes out as 2 |x| dy, wrong wherever x < 0. Save the "
         "input x itself for the backward; y = x * x does not determine x.",
         symptom="Square's gradient is 2 |x| dy: right where x > 0, the wrong sign where x < 0."),
    Trap("backward-not-differentiable", "Square's backward is not recorded on the tape: its result "
         "is built from raw arrays (.data, numpy) or from a detached copy of x, so with "
         "create_graph=True the gradient is a constant and its own derivative, which a "
         "Hessian-vector product needs, is lost. Write the backward with Tensor operations on the "
         "saved x itself.",
         symptom="Square's backward, run with create_graph=True, gives a gradient that is not on "
                 "the tape back to x, so second derivatives through Square are lost."),
    Trap("hvp-by-differences", "hvp takes a difference of gradients, (grad f(x + h v) - grad "
         "f(x - h v)) / 2h, instead of differentiating the gradient itself. That is an estimate "
         "with a truncation error of order h**2 times the third derivative and a rounding error "
         "of order 1e-16 / h, and it costs two gradients per product. Ask grad for the gradient "
         "with create_graph=True (so it is on the tape, a function of x), then take grad of "
         "<gradient, v> once more: the exact product, for one extra backward pass.",
         symptom="hvp is right on a smooth loss but wrong where the loss has a large fourth-order "
                 "term that vanishes at x: it differences gradients away from x."),
    Trap("ste-zero", "RoundSTE's backward passes no gradient: round's own derivative, 0 almost "
         "everywhere. The straight-through estimator breaks the chain rule on purpose and passes "
         "the upstream gradient through unchanged, as if round were the identity.",
         symptom="RoundSTE's backward returns zeros: nothing flows back through it."),
]

NOT_RECORDED_SQUARE = '''
class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return Tensor(x.data * x.data)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return Tensor(2.0 * x.data * grad_output.data)
'''
"""The Square of ``backward-not-differentiable``: right values, built from raw arrays."""


@functools.lru_cache(maxsize=None)
def harness(snippet: str):
    """The solution's code (engine, ``grader_*`` calls, reference answers) with ``snippet``
    after it, run in a namespace of its own: trusted code, as the reference is."""
    from backprop_traps.grader.loading.notebook import graded_code, parse_notebook
    from backprop_traps.grader.loading.questions import solution_path
    source = graded_code(parse_notebook(solution_path("custom_function").read_text(encoding="utf-8")))
    namespace: dict = {"__name__": "custom_function_trap"}
    exec(compile(source + "\n" + snippet, "<custom_function trap>", "exec"), namespace)
    return namespace


def hvp_without_square_term(x, v, a, b, c):
    """What hvp gives when Square's backward is not on the tape."""
    return harness(NOT_RECORDED_SQUARE)["grader_hvp"](x, v, a, b, c)
