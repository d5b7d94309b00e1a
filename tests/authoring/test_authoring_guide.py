"""docs/authoring.md, followed step by step on its toy question in a folder of its own:
scaffold, validate the unfilled scaffold (a list of what to fill in), fill in exactly the
code the guide shows, release, and validate everything (notebooks and kernels included)."""
import nbformat
from click.testing import CliRunner

from backprop_traps.grader.cli import main
from conftest import REPO

GUIDE = (REPO / "docs" / "authoring.md").read_text()

# What the guide tells the author to write, placeholder by placeholder. The code must be
# the guide's own (checked below), so the guide and this test cannot drift apart.
FILL = {
    "solutions/01_tanh_layer.ipynb": {
        "SCAFFOLD: the story: who hits this bug, where, and why it matters.":
            "For large |x| the slope of tanh vanishes.",
        "SCAFFOLD: what the learner writes, and the one idea that makes the backward right.":
            "The slope of tanh is 1 - tanh(x)**2.",
        '"""SCAFFOLD: what the forward computes. x: (N, D). Returns out (N, D)."""':
            '"""Elementwise tanh. x: (N, D). Returns out (N, D)."""',
        'raise NotImplementedError("SCAFFOLD: the forward\'s solution (and its size hint above)")':
            "out = np.tanh(x)  # N, D",
        '"""SCAFFOLD: what the backward computes. dout, x: (N, D). Returns dx (N, D)."""':
            '"""Gradient of tanh. dout, x: (N, D). Returns dx (N, D)."""',
        'raise NotImplementedError("SCAFFOLD: the backward\'s solution (and its size hint above)")':
            "dx = dout * (1.0 - np.tanh(x) ** 2)  # N, D",
        "SCAFFOLD: a hand-worked example.": "tanh is odd: tanh(-x) = -tanh(x).",
        "SCAFFOLD: the derivation, one step per markdown cell tagged `derivation` (the stub\n"
        "drops them; `grade reveal` shows them one at a time): the forward, then the backward it implies.":
            "d tanh(x) / dx = 1 - tanh(x)**2, so each dx is dout times that slope.",
        "SCAFFOLD: the interview, part by part, in your own words: this question as an interviewer asks it.":
            "Why does a deep tanh network stop learning?",
    },
    "checks/tanh_layer.py": {
        "SCAFFOLD: what the checks look for, in a line or two.":
            "The forward's values and the backward's finite differences.",
    },
    "kernels/tanh_layer.py": {
        "SCAFFOLD: what they compute, in one line.": "Elementwise tanh and its gradient.",
        "out[i] = x[i]  # SCAFFOLD: the forward of one element": "out[i] = math.tanh(x[i])",
        "dx[i] = dout[i]  # SCAFFOLD: the backward of one element":
            "dx[i] = dout[i] * (1.0 - math.tanh(x[i]) ** 2)",
    },
}
GUIDE_CODE = ["out = np.tanh(x)  # N, D", "dx = dout * (1.0 - np.tanh(x) ** 2)  # N, D",
              "out[i] = math.tanh(x[i])", "dx[i] = dout[i] * (1.0 - math.tanh(x[i]) ** 2)"]


def grade(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def fill(root):
    for rel, subs in FILL.items():
        path = root / rel
        if path.suffix == ".ipynb":
            nb = nbformat.read(str(path), as_version=4)
            text = "\n".join(c.source for c in nb.cells)
            for cell in nb.cells:
                for old, new in subs.items():
                    cell.source = cell.source.replace(old, new)
            nbformat.write(nb, str(path))
        else:
            text = path.read_text()
            path.write_text(_replace_all(text, subs))
        assert all(old in text for old in subs), f"the scaffold changed: update the guide ({rel})"


def _replace_all(text, subs):
    for old, new in subs.items():
        text = text.replace(old, new)
    return text


def test_the_guide_shows_the_code_this_test_fills_in():
    for line in GUIDE_CODE:
        assert line in GUIDE, line
    for command in ("grade new tanh_layer", "grade release tanh_layer", "grade validate tanh_layer"):
        assert command in GUIDE


def test_the_guide_end_to_end(tmp_path):
    out = grade("new", "tanh_layer", "--title", "Tanh saturates", "--questions-dir", tmp_path)
    assert out.exit_code == 0, out.output

    unfilled = grade("validate", "tanh_layer", "--questions-dir", tmp_path)
    assert unfilled.exit_code == 1 and "Traceback" not in unfilled.output
    assert unfilled.output.count("FILL ") == 13
    assert "solutions/01_tanh_layer.ipynb (cell 5, line 6): the forward's solution" in unfilled.output
    assert "kernels/tanh_layer.py (line 22): the forward of one element" in unfilled.output
    assert "fill in the lines above" in unfilled.output

    fill(tmp_path)
    assert grade("release", "tanh_layer", "--questions-dir", tmp_path).exit_code == 0
    done = grade("validate", "tanh_layer", "--questions-dir", tmp_path)
    assert done.exit_code == 0, done.output
    for line in ("the solution gets full marks (3/3)", "trap 'sign-flipped' loses 2 points and is named",
                 "the solution runs clean in a Jupyter kernel",
                 "Run All goes through the stub to its grade cell",
                 "the kernels agree with the solution under the simulator"):
        assert line in done.output
