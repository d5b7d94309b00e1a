"""`grade progress`: the table (full marks out of the total, attempts, hints, interview scores
over time, mocks, what is due) and `--plot FILE`, a PNG, with matplotlib imported only then."""
import subprocess
import sys

import pytest
from click.testing import CliRunner

from backprop_traps.grader.cli import main
from backprop_traps.grader.learner import review
from backprop_traps.grader.learner.history import History


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKPROP_TRAPS_QUESTIONS", raising=False)
    monkeypatch.setenv("BACKPROP_TRAPS_NOW", "2026-03-10T10:00")
    return tmp_path


def _history(folder, monkeypatch):
    h = History.load(folder)
    h.record_score("routing_trap", 6, 12, "a")
    h.record_score("routing_trap", 12, 12, "b")
    h.questions["routing_trap"]["hints_seen"] = {"overlaps": 2, "ties": 1}
    h.record_score("bptt", 3, 10, "c")
    for day, hit in (("2026-03-01", 2), ("2026-03-04", 4), ("2026-03-08", 5)):
        monkeypatch.setenv("BACKPROP_TRAPS_NOW", f"{day}T10:00")
        h.record_interview("routing_trap", hit, 5, day)
        review.record_spoken(h, "routing_trap", hit, 5)
    monkeypatch.setenv("BACKPROP_TRAPS_NOW", "2026-03-10T10:00")
    h.sections["mocks"] = [{"date": "2026-03-09", "question": "bptt", "elapsed_s": 1800, "timed_out": True,
                            "spoken": {"hit": 2, "of": 6}, "code": {"score": 3.0, "max_score": 10.0}}]
    h.save()


def test_the_table(here, monkeypatch):
    _history(here, monkeypatch)
    out = CliRunner().invoke(main, ["progress"])
    assert out.exit_code == 0, out.output
    from backprop_traps.grader.loading.questions import solution_notebooks
    every = len(solution_notebooks())
    assert out.output.startswith(f"1/{every} questions at full marks; 3 interviews rehearsed; 1 mock interview.")
    row = next(ln for ln in out.output.splitlines() if " routing_trap " in ln)
    cells = row.split()
    assert cells[:5] == ["01", "routing_trap", "12/12", "full", "2"] and cells[5] == "3"  # attempts, hints
    assert "2/5 > 4/5 > 5/5" in row and "due in" in row
    assert "3/10" in next(ln for ln in out.output.splitlines() if " bptt " in ln)
    assert "2026-03-09  bptt: spoken 2/6, code 3/10, 30 min (time ran out)" in out.output


def test_the_plot_is_a_png(here, monkeypatch):
    _history(here, monkeypatch)
    out = CliRunner().invoke(main, ["progress", "--plot", "me"])
    assert out.exit_code == 0 and "Drawn into me.png." in out.output
    assert (here / "me.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    empty = here / "fresh"
    empty.mkdir()
    monkeypatch.chdir(empty)
    assert CliRunner().invoke(main, ["progress", "--plot", "p.png"]).exit_code == 0  # nothing yet: still a picture
    assert (empty / "p.png").stat().st_size > 1000


def test_a_plot_that_cannot_be_written_is_one_sentence(here):
    out = CliRunner().invoke(main, ["progress", "--plot", str(here / "no" / "such" / "dir" / "p.png")])
    assert out.exit_code == 1 and "cannot write" in out.output and "Traceback" not in out.output


@pytest.mark.parametrize("args, plotted", [(["progress"], False), (["next"], False), (["progress", "--plot", "x.png"], True)])
def test_matplotlib_is_imported_only_to_plot(here, args, plotted):
    code = ("import sys\nfrom backprop_traps.grader.cli import main\n"
            f"try:\n    main({args!r})\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "print('MATPLOTLIB', 'matplotlib' in sys.modules, 'numpy' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=here, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"MATPLOTLIB {plotted} {plotted}" in done.stdout


def test_the_plot_spans_the_data_shows_every_attempt_and_tells_zero_from_not_started(here, monkeypatch):
    """Issue 51: one day of data drew an axis over 2025-2029, two scores of one day a vertical
    line hiding a third, and a 0/23 question no bar, like one never attempted."""
    pytest.importorskip("matplotlib")
    import matplotlib.dates as mdates
    from backprop_traps.grader.learner import progress
    from backprop_traps.grader.loading.questions import solution_notebooks

    h = History.load(here)
    h.record_score("residual_backward", 0, 23, "a")
    h.record_score("bptt", 4, 10, "b")
    for hit in (2, 4, 4):  # three of one day, two with the same score
        h.record_interview("routing_trap", hit, 5, "2026-03-10")
    found = progress.rows(h, solution_notebooks())
    fig = progress.figure(found)
    spoken, code = fig.axes
    low, high = (mdates.num2date(x) for x in spoken.get_xlim())
    assert (high - low).days <= 2, (low, high)
    (line,) = spoken.get_lines()
    xs = line.get_xdata()
    assert len(set(xs)) == 3 and line.get_marker() not in (None, "None", "")
    heights = {name: bar.get_height() for name, bar in zip([r.question for r in found], code.patches)}
    assert heights["residual_backward"] > 0 and heights["bptt"] == pytest.approx(40)
    assert heights["softmax_ce"] == 0
    labels = [t.get_text() for t in code.texts]
    assert "0/23" in labels and labels.count("not started") == len(found) - 2
    fig.clf()
