"""Issue 35, class 4: invisible formatting characters in everything shown from learner data.

U+061C, the tag characters U+E0020-E007F, U+FEFF, U+2060-U+2064, bidi overrides and
isolates, separators, private use and unassigned code points, put where a learner controls
the text: exception messages, a load warning, printed output, the file name and the student's
folder name. Each surface is read as its reader gets it, and judged by Unicode category with
``unicodedata`` (report_kit.raw_format_characters), not by the grader's own filter: the
terminal report (on a real pseudo-terminal, colours on), `grade show`, the batch's summary and
gradebook, every export format, and the report nbgrader's feedback page shows. The sandbox's
isolation level does not change what the grader shows, so they run in the default mode.
"""
import re

import nbformat
from click.testing import CliRunner

from backprop_traps.grader.cli import main
from redteam_kit import assert_clean_report, build, on_terminal
from report_kit import raw_format_characters

HIDDEN = ("\u061c\U000e0041\U000e0020\U000e007f\ufeff\u2060\u2061\u2062\u2063\u2064\u202e\u202d"
          "\u2066\u2069\u200f\ue000\u0378")
"""What a learner can put in a file or folder name (no separator: a terminal's own business)."""
LIMITS = ["--call-timeout", "4", "--total-timeout", "20"]


def test_the_terminal_report_shows_no_format_character(tmp_path):
    path = build("report_format_characters", tmp_path, filename=f"answer{HIDDEN}.py")
    shown = on_terminal([str(path), *LIMITS], tmp_path)
    assert "Score:" in shown and "Warnings" in shown, shown[-2000:]
    assert_clean_report(shown, 8)
    assert "\\u061c" in shown and "\\U000e0041" in shown and "\\ufeff" in shown  # shown, escaped


def test_grade_show_the_summary_and_every_export_show_no_format_character(tmp_path):
    student = f"eve{HIDDEN}"
    folder = tmp_path / "class" / student
    folder.mkdir(parents=True)
    build("report_format_characters", folder, filename="forward_vs_reverse.py")
    (folder / f"softmax_ce{HIDDEN}.py").write_text(f"# question: softmax_ce\nraise ValueError('{HIDDEN}')\n")
    out = tmp_path / "out"
    batch = CliRunner().invoke(main, ["batch", str(tmp_path / "class"), "-o", str(out), "-j", "1", *LIMITS])
    assert batch.exit_code == 0, batch.output
    assert not raw_format_characters(batch.output)
    for name in ("summary.txt", "gradebook.csv"):
        assert not raw_format_characters((out / name).read_text()), name
    show = CliRunner().invoke(main, ["show", str(out), student])
    assert show.exit_code == 0 and "Score:" in show.output, show.output
    from backprop_traps.grader.checks import load_question
    checks = sum(len(load_question(q).checks) for q in ("forward_vs_reverse", "softmax_ce"))
    for report in show.output.split("\n\nsoftmax_ce  ·  "):  # one report per file, each clean
        assert_clean_report(report, len(re.findall(r"^  (PASS|FAIL|BUG) ", report, re.M)))
    assert len(re.findall(r"^  (PASS|FAIL|BUG) ", show.output, re.M)) == checks
    for form in ("csv", "canvas", "moodle"):
        export = CliRunner().invoke(main, ["export", str(out), "--format", form])
        assert export.exit_code == 0 and "eve" in export.output
        assert not raw_format_characters(export.output), form


def test_the_nbgrader_feedback_report_shows_no_format_character(tmp_path):
    """What SandboxedScore writes into the hidden-checks cell, which `nbgrader generate_feedback`
    turns into the student's feedback page (tests/batch/test_nbgrader_course.py runs the whole course)."""
    from backprop_traps.grader.authoring.nbgrader_cell import GRADE_ID
    from backprop_traps.grader.batch.nbgrader_course import SandboxedScore
    attack = build("report_format_characters", tmp_path).read_text()
    hidden_checks = nbformat.v4.new_code_cell(
        'from backprop_traps.grader.nbgrader_bridge import run_hidden_checks\n'
        'run_hidden_checks("forward_vs_reverse", globals())',
        metadata={"nbgrader": {"grade": True, "grade_id": GRADE_ID, "points": 14, "solution": False}})
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(attack), hidden_checks])
    report, _ = SandboxedScore().grade(nb, hidden_checks, f"eve{HIDDEN}")
    assert "Score:" in report and "eve" in report
    assert_clean_report(report, 8)
