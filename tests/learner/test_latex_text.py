"""`grade reveal` readable in a terminal (issue 38, item 6): the derivations' LaTeX written as
text (≈, ᵀ, subscripts), code spans left alone, and no step that points at something a
terminal does not show (a plot, a cell "below")."""
import re

import pytest
from click.testing import CliRunner

from backprop_traps.grader.cli import main
from backprop_traps.grader.learner.latex_text import KNOWN, latex_to_text, markdown_to_text
from backprop_traps.grader.learner.reveal import derivation
from backprop_traps.grader.loading.questions import solution_notebooks


@pytest.mark.parametrize("latex, text", [
    (r"\frac{\partial L}{\partial W_{hh}} = \sum_{t} h_{t-1}^\top\, dz_t",
     "∂L/∂Wₕₕ = ∑ₜ hₜ₋₁ᵀ dzₜ"),
    (r"m_t = \beta_1 m_{t-1} + (1-\beta_1) g_t", "mₜ = β₁ mₜ₋₁ + (1-β₁) gₜ"),
    (r"\frac{1}{1 - \beta_2^t}", "1/(1 - β₂ᵗ)"),
    (r"\sqrt{\hat v} + \epsilon \approx 10^{-5}", "√v̂ + ε ≈ 10⁻⁵"),
    (r"\sqrt{\hat v + \epsilon}", "√(v̂ + ε)"),
    (r"\min(1, \text{max\_norm} / \lVert g \rVert)", "min(1, max_norm / ‖g‖)"),
    (r"dh_t = dz_{t+1}\, W_{hh}^\top \odot (1 - h_t^2)", "dhₜ = dzₜ₊₁ Wₕₕᵀ ⊙ (1 - hₜ²)"),
    (r"0 < 1 - h^2 \le 1", "0 < 1 - h² ≤ 1"),
    (r"\frac{1}{2N}\sum_{n,k}", "1/(2N) ∑_(n,k)"),
    (r"J \in \mathbb{R}^{m \times n}", "J ∈ ℝ^(m × n)"),
    (r"\mathcal{N}(z; \mu, \sigma^2)", "𝒩(z; μ, σ²)"),
    (r"\left( a \right)", "(a)"),
    (r"\bar{x}_{n}", "x̄ₙ"),
    (r"\unknowncommand x", "unknowncommand x"),
    # issue 51: every construct the derivations use
    (r"\underbrace{g}_{\text{identity}} + \underbrace{dz\, W_1^\top}_{\text{through } F}",
     "g (identity) + dz W₁ᵀ (through F)"),
    (r"\widetilde{dy_1} = dy_1", "d\u0303y\u0303₁ = dy₁"),  # a wide tilde: on each letter
    (r"\tilde q\,'(x)", "q̃ '(x)"),
    (r"\begin{pmatrix} 0.9 & 10 \\ 0 & 0.9 \end{pmatrix}", "[[0.9, 10], [0, 0.9]]"),
    (r"\begin{array}{cc} a & b^2 \\ c & d \end{array}", "[[a, b²], [c, d]]"),
    (r"\mathbb{1}[x > 0]", "𝟙[x > 0]"),
    (r"\Big(\big((u^\top A_k)\, A_{k-1}\big) \cdots\Big)", "(((uᵀ Aₖ) Aₖ₋₁) ⋯)"),
])
def test_formulas_as_text(latex, text):
    assert latex_to_text(latex) == text


def test_code_spans_and_prices_stay_as_they_are():
    md = "Use `x_t^T` here, and $a_1$ there; it costs $5 or 6 dollars."
    assert markdown_to_text(md) == "Use `x_t^T` here, and a₁ there; it costs $5 or 6 dollars."


def test_display_math_stands_on_its_own_indented_line():
    text = markdown_to_text("so\n\n$$a = b_1,\\qquad c \\approx d$$\n\nwhere")
    assert "\n    a = b₁,    c ≈ d\n" in text


@pytest.mark.parametrize("question", list(solution_notebooks()))
def test_every_derivation_step_reads_without_latex_and_points_at_nothing_unseen(question):
    for step in derivation(question):
        text = markdown_to_text(step)
        prose = re.sub(r"(`+).+?\1", "", text, flags=re.S)  # code spans keep their backslashes
        assert not re.search(r"\\[A-Za-z]+|\$", prose), (question, prose)
        unseen = re.search(r"\b(plot|figure|chart|graph|picture|diagram|cell|image|output|visible test)s?"
                           r" (below|above)\b", text, re.I)
        assert not unseen, (question, unseen.group(0))


def _math(markdown):
    return [a or b for a, b in re.findall(r"\$\$(.+?)\$\$|(?<![\\$])\$(?!\s)(.+?)(?<!\\)\$(?!\d)", markdown, re.S)]


@pytest.mark.parametrize("question", list(solution_notebooks()))
def test_every_latex_command_in_every_derivation_is_rendered(question):
    """Issue 51: ``\\underbrace`` came out as ``underbraceg_identity``. Every command the
    derivations use is one the converter renders (an unknown one keeps its name), and no
    backslash or brace survives but the set braces ``\\{ \\}`` a formula writes."""
    for step in derivation(question):
        for formula in _math(re.sub(r"(`+).+?\1", "", step, flags=re.S)):
            commands = set(re.findall(r"\\([A-Za-z]+)", formula))
            assert commands <= KNOWN, (question, commands - KNOWN, formula)
            text = latex_to_text(formula)
            assert "\\" not in text, (question, text)
            literal = len(re.findall(r"\\[{}]", formula))
            assert text.count("{") + text.count("}") == literal, (question, formula, text)


def test_reveal_prints_text_not_latex(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(main, ["reveal", "19", "--all"])
    assert out.exit_code == 0, out.output
    assert "∂L/∂Wₕₕ" in out.output and "\\frac" not in out.output and "$" not in out.output
    assert "plot below" not in out.output


def test_reveal_without_an_id_shows_the_question_you_are_on(tmp_path, monkeypatch):
    """Issue 51: `grade reveal` with no id picks the question you are on, as `grade interview`
    picks one: the one graded last without full marks, else a notebook here, else the first new."""
    from backprop_traps.grader.learner import review
    from backprop_traps.grader.learner.history import History

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKPROP_TRAPS_QUESTIONS", raising=False)
    first = next(iter(solution_notebooks()))
    out = CliRunner().invoke(main, ["reveal"])
    assert out.exit_code == 0 and f"({first}: the first question not started" in out.output, out.output
    (tmp_path / solution_notebooks()["bptt"].name).write_text("{}")
    out = CliRunner().invoke(main, ["reveal"])
    assert "(bptt: its notebook" in out.output and "bptt: derivation step 1 of" in out.output, out.output
    h = History.load()
    for qid, score, moment in [("softmax_ce", 1, "2026-03-02T10:00"), ("residual_backward", 0, "2026-03-02T11:00"),
                               ("layernorm_backward", 6, "2026-03-02T12:00")]:
        monkeypatch.setenv("BACKPROP_TRAPS_NOW", moment)
        h.record_score(qid, score, 6 if qid == "layernorm_backward" else 23)
        review.record_code(h, qid, score, 6 if qid == "layernorm_backward" else 23)
    h.save()  # layernorm_backward, graded last, has full marks: residual_backward is the one you are on
    out = CliRunner().invoke(main, ["reveal"])
    assert "(residual_backward: graded last" in out.output, out.output
    assert "residual_backward: derivation step" in out.output
