"""`grade reveal` readable in a terminal (issue 38, item 6): the derivations' LaTeX written as
text (≈, ᵀ, subscripts), code spans left alone, and no step that points at something a
terminal does not show (a plot, a cell "below")."""
import re

import pytest
from click.testing import CliRunner

from backprop_traps.grader.cli import main
from backprop_traps.grader.learner.latex_text import latex_to_text, markdown_to_text
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


def test_reveal_prints_text_not_latex(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(main, ["reveal", "19", "--all"])
    assert out.exit_code == 0, out.output
    assert "∂L/∂Wₕₕ" in out.output and "\\frac" not in out.output and "$" not in out.output
    assert "plot below" not in out.output
