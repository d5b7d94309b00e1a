"""Issue 43, class 2: every output surface escapes for its medium, at one choke point.

One hostile corpus (markup and event attributes, ``</script>``, ``javascript:`` links, ESC
sequences, BEL, C1 controls, bidi marks, formula prefixes ``= + - @ \\t \\r``), put wherever a
learner or a history file controls text, and every surface read as its reader gets it:

- HTML (the notebook's "Grade it" report, grader/learner/report_html.py): parsed, it holds only
  the grader's own tags and attributes, whatever the text; and the module can make markup only
  through ``tag`` (markupsafe's ``Markup.format``, which escapes every value it fills in).
- the terminal (the report, `grade next`, `grade progress`, `grade show`, `grade mock`'s summary,
  `grade interview`'s report): no raw control or format character (judged by Unicode category,
  report_kit.raw_format_characters, not by the grader's own filter);
- CSV exports (csv, canvas, moodle): no cell a spreadsheet would run as a formula;
- JSON (`grade interview --json`): still JSON, and no raw control or format character;
- `grade show` never prints a course seed, not even for a submission that could not be read.

``hypothesis`` adds generated hostile strings to the fixed corpus for the renderers.
"""
from __future__ import annotations

import ast
import csv
import io
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from backprop_traps.grader.cli import main
from backprop_traps.grader.engine.results import CheckResult, GradeResult, VisibleTests
from backprop_traps.grader.learner.report import render
from backprop_traps.grader.learner.report_html import render_html
from report_kit import raw_format_characters

CORPUS = ["<img src=x onerror=alert(1)>", "<script>alert(1)</script>", "</script><script>alert(2)</script>",
          '<a href="javascript:alert(3)">x</a>', "\" onmouseover=\"alert(4)", "\x1b[2J\x1b[31mPASS 2/2\x1b]0;t\x07",
          "\x07", "\x9b31m\x85", "\u202eevil\u202c", "\u2066x\u2069", "\u200e\u200f\u061c", "=HYPERLINK(\"http://x\")",
          "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1", "cell 3 &amp; <b>"]
HOSTILE = " ".join(CORPUS)
MARKUP_CHARS = st.sampled_from(list("<>\"'&=/ ") + ["script", "img", "onerror", "javascript:", "\x1b", "\x07",
                                                    "\u202e", "\u2069", "\x85", "\t", "\r", "\n"])
GENERATED = st.lists(st.one_of(MARKUP_CHARS, st.text(max_size=4)), max_size=24).map("".join)
ALLOWED_TAGS = {"div", "span", "table", "tr", "td", "pre", "ul", "li", "b"}
ALLOWED_ATTRIBUTES = {"style", "class"}


def hostile_result(text: str) -> GradeResult:
    """A result whose every learner-controlled text is ``text``."""
    return GradeResult(
        f"nb{text}.ipynb", "routing_trap", 0.0, 12.0, seed=7,
        tests=[CheckResult(f"check {text}", 0.0, 2.0, False, trap=f"trap{text}", feedback=f"cell 3 raised {text}\n"
                           f"    example {text}\nmore {text}"),
               CheckResult("a check", 2.0, 2.0, True)],
        warnings=[f"cell 3 raised ValueError: {text}"], manual=[f"answer {text}"],
        public=VisibleTests(1, 2, [f"visible {text}"]))


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.attributes = set(), []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attributes += attrs


def assert_inert_html(html: str) -> None:
    parser = _Tags()
    parser.feed(html)
    parser.close()
    assert parser.tags <= ALLOWED_TAGS, parser.tags - ALLOWED_TAGS
    assert {name for name, _ in parser.attributes} <= ALLOWED_ATTRIBUTES, parser.attributes
    assert not any("javascript:" in (value or "") for _, value in parser.attributes)
    assert not raw_format_characters(html) and "\r" not in html


def assert_inert_text(text: str) -> None:
    assert not raw_format_characters(text), raw_format_characters(text)
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text


@pytest.mark.parametrize("text", CORPUS + [HOSTILE])
def test_the_html_report_holds_only_the_graders_markup(text):
    labels = {3: f"[ ] (not run as saved: `#{text}`)", 4: "[2]"}
    html = render_html(hostile_result(text), f"nb{text}.ipynb", labels, stale=f"stale {text}",
                       follow_up=f"hint {text}\n  indented {text}")
    assert_inert_html(html)


def test_a_cells_first_line_in_its_label_is_inert():
    """The exploit of the round: a student's cell whose first line is markup, quoted in its label."""
    result = hostile_result("x")
    html = render_html(result, "nb.ipynb", {3: "[ ] (not run as saved: `#<img src=x onerror=alert(1)>`)"})
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert_inert_html(html)


@settings(max_examples=150, deadline=None)
@given(GENERATED)
def test_generated_text_never_becomes_markup_or_a_control_sequence(text):
    assert_inert_html(render_html(hostile_result(text), text, {3: text}, stale=text, follow_up=text))
    assert_inert_text(render(hostile_result(text), color=False))


def test_the_html_module_makes_markup_only_through_its_escaping_template():
    """Structural: no f-string, % or + building markup, no html.escape; ``Markup(...)`` and
    ``tag(...)`` take only a literal template, so an unescaped value has no way in."""
    import backprop_traps.grader.learner.report_html as module
    tree = ast.parse(Path(module.__file__).read_text())
    markup_fstrings = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.JoinedStr)
                       and any(isinstance(v, ast.Constant) and "<" in str(v.value) for v in n.values)]
    assert not markup_fstrings, f"markup built by an f-string in report_html, lines {markup_fstrings}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("Markup", "tag"):
            first = node.args[0] if node.args else None
            literal = isinstance(first, ast.Constant) and isinstance(first.value, str)
            assert literal or getattr(first, "id", None) == "template", f"line {node.lineno}: not a literal template"
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
            sides = [node.left, node.right]
            assert not any(isinstance(s, ast.Constant) and "<" in str(s.value) for s in sides), node.lineno
        if isinstance(node, ast.Attribute) and node.attr == "escape":
            pytest.fail(f"line {node.lineno}: escaping outside the choke point")
    assert isinstance(render_html(hostile_result("x"), "nb.ipynb"), module.Markup)


def test_the_terminal_report_is_inert():
    assert_inert_text(render(hostile_result(HOSTILE), color=False))


# -- the learner's commands, on a history anything may have written -------------------------------
@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKPROP_TRAPS_QUESTIONS", raising=False)
    monkeypatch.setenv("BACKPROP_TRAPS_NOW", "2026-12-01T12:00:00+00:00")
    return tmp_path


def hostile_history(folder: Path) -> None:
    """A history the kit wrote (a grading, a rehearsal, a mock), then its texts made hostile."""
    from backprop_traps.grader.learner import review
    from backprop_traps.grader.learner.history import FILENAME, History
    history = History.load(folder)
    history.record_score("routing_trap", 6.0, 12.0, "0" * 64)
    review.record_code(history, "routing_trap", 6.0, 12.0)
    history.record_interview("bptt", 2, 5, "2026-11-20")
    review.record_spoken(history, "bptt", 2, 5)
    history.sections["mocks"] = [{"date": f"2026-11-21{HOSTILE}", "question": f"routing_trap{HOSTILE}",
                                  "spoken": {"hit": 1, "of": 5}, "code": {"score": 3.0, "max_score": 12.0},
                                  "elapsed_s": 600, "timed_out": False, "missed": [HOSTILE]}]
    history.save()
    doc = json.loads((folder / FILENAME).read_text())
    for card in doc["review"]["cards"].values():
        card["why"] = f"why \x1b[2J\x07\u202e\x85 {HOSTILE}"[:120]
    (folder / FILENAME).write_text(json.dumps(doc))


@pytest.mark.parametrize("args", [["next"], ["next", "--all"], ["progress"]])
def test_next_and_progress_print_history_text_inert(here, monkeypatch, args):
    hostile_history(here)
    monkeypatch.setenv("BACKPROP_TRAPS_NOW", "2027-06-01T12:00:00+00:00")  # every card due: its why shown
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    assert_inert_text(out.output)
    if args[0] == "next":  # a card's why is shown, escaped; progress sets the hostile mock aside
        assert "\\x1b" in out.output  # (the persisted-state schema: its date is not a day)


def test_interview_report_and_json_are_inert(here):
    answer = here / "answer.txt"
    answer.write_text(f"The gradient goes to the argmax winner {HOSTILE} and overlapping windows add up.")
    out = CliRunner().invoke(main, ["interview", "routing_trap", "--answer", str(answer)])
    assert out.exit_code == 0, out.output
    assert_inert_text(out.output)
    out = CliRunner().invoke(main, ["interview", "routing_trap", "--answer", str(answer), "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["question"] == "routing_trap"
    assert_inert_text(out.output)


def test_the_mock_prints_its_flow_and_summary_inert(here, monkeypatch):
    from backprop_traps.grader.learner import mock as flow

    class Graded:
        score, max_score, error = 3.0, 12.0, None

        class T:
            def __init__(self, name, passed):
                self.name, self.passed = name, passed
        tests = [T(f"routes {HOSTILE}", True), T(f"overlaps {HOSTILE}", False)]

    real = flow.run
    lines = [f"the argmax winner {HOSTILE}", "", f"nothing{HOSTILE}", "done"] + [f"follow {HOSTILE}", ""] * 6

    def scripted(chosen, notebook, minutes, ask, say, grade, clock):
        return real(chosen, notebook, minutes, lambda prompt, seconds: lines.pop(0) if lines else None, say,
                    lambda path: Graded(), clock)
    monkeypatch.setattr(flow, "run", scripted)
    out = CliRunner().invoke(main, ["mock", "routing_trap", "--minutes", "30"])
    assert "Mock over" in out.output, out.output
    assert_inert_text(out.output)


# -- an instructor's batch: grade show and every export ----------------------------------------------
SECRET = "course-secret-43"


def _batch_with_hostile_results(tmp_path, monkeypatch) -> Path:
    """A course batch: one student whose file is a link (refused, never read: a stored error) and
    one whose stored result then gets hostile texts (as a tampered or hostile result would)."""
    monkeypatch.setenv("BACKPROP_TRAPS_SECRET", SECRET)
    root, target = tmp_path / "class", tmp_path / "elsewhere.py"
    target.write_text("# question: routing_trap\n")
    for student in ("s001", "=cmd<img src=x onerror=alert(1)>\x1b[2J\x07\u202e\x85"):
        (root / student).mkdir(parents=True)
        (root / student / "routing_trap.py").symlink_to(target)
    out = tmp_path / "out"
    done = CliRunner().invoke(main, ["batch", str(root), "-o", str(out), "-j", "1"])
    assert done.exit_code == 0, done.output
    for path in (out / "results").rglob("*.json"):
        if path.name.endswith(".run.json") or "cmd" not in str(path):
            continue
        doc = json.loads(path.read_text())
        doc.update(error=None, question="routing_trap", warnings=[HOSTILE],
                   tests=[{"name": f"check {HOSTILE}", "points": 0, "max_points": 12, "passed": False,
                           "trap": HOSTILE[:200], "feedback": f"f() raised {HOSTILE}"}])  # a name: 200 at most
        path.write_text(json.dumps(doc))
    return out


def test_show_and_exports_are_inert_and_show_no_course_seed(tmp_path, monkeypatch):
    from backprop_traps.grader.batch.variants import student_seed
    out = _batch_with_hostile_results(tmp_path, monkeypatch)
    students = sorted(p.name for p in (tmp_path / "class").iterdir())
    for student in students:
        shown = CliRunner().invoke(main, ["show", str(out), student])
        assert shown.exit_code == 0 and "replay:" in shown.output, shown.output
        assert_inert_text(shown.output)
        seed = student_seed(SECRET, student, 1234, assignment="", question="routing_trap")
        assert "--seed" not in shown.output and f"seed {seed}" not in shown.output, shown.output
        assert str(seed) not in shown.output
    for form in ("csv", "canvas", "moodle"):
        export = CliRunner().invoke(main, ["export", str(out), "--format", form])
        assert export.exit_code == 0, export.output
        assert_inert_text(export.output.replace("\r\n", "\n"))
        for row in csv.reader(io.StringIO(export.stdout)):
            for cell in row:
                number = cell.lstrip("-").replace(".", "", 1).isdigit()
                assert number or not cell[:1] in ("=", "+", "-", "@", "\t", "\r"), (form, cell)
