"""Issue 51, item 2: a submission anywhere is graded inside bubblewrap, or not graded at all.

A solution graded from inside the installed package (``site-packages/backprop_traps/grader/
content/solutions``) lies under the kit's masked tree: bwrap could not make its folder's mount
point in the read-only tmpfs hiding the kit, the grader took that for a machine without
bubblewrap, and the run went on with fewer layers and scored 0. Now nested hidden paths are
hidden once (grader/sandbox/masks.py), a hidden folder holding Python is hidden around it, and
a sandbox that cannot start is a grader error, never a fallback nor a learner's 0.
"""
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backprop_traps.grader.sandbox import bwrap
from backprop_traps.grader.sandbox.limits import Limits
from backprop_traps.grader.sandbox.masks import mask_arguments, within
from backprop_traps.grader.sandbox.process import Sandbox
from conftest import REPO

FAST = Limits(call_seconds=20, total_seconds=60)
needs_bwrap = pytest.mark.skipif(not bwrap.probe()[0], reason="bubblewrap cannot make a sandbox here")

# -- the mounts, on generated trees ----------------------------------------------------------
PART = st.sampled_from(["a", "b", "c", "k"])
REL = st.lists(PART, min_size=1, max_size=4).map("/".join)


def _targets(args: list[str]) -> list[tuple[str, str]]:
    """[(kind, target)] of the mounts in ``args``, in order."""
    out = []
    for i, arg in enumerate(args):
        if arg == "--tmpfs":
            out.append(("tmpfs", args[i + 1]))
        elif arg == "--ro-bind":
            out.append(("file", args[i + 2]))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=st.lists(REL, min_size=1, max_size=12), hidden=st.lists(REL, max_size=6),
       needed=st.lists(REL, max_size=3))
def test_every_hidden_path_is_hidden_once_and_python_never(files, hidden, needed):
    with tempfile.TemporaryDirectory() as base:
        root = os.path.join(base, "root")
        for rel in files:  # the last part of each is a file unless something lies below it
            path = os.path.join(root, rel)
            if not any(other.startswith(rel + "/") for other in files):
                os.makedirs(os.path.dirname(path), exist_ok=True)
                if not os.path.isdir(path):
                    Path(path).write_text("x")
            else:
                os.makedirs(path, exist_ok=True)
        hidden_paths = [os.path.join(root, h) for h in hidden if os.path.lexists(os.path.join(root, h))]
        needs = [os.path.join(root, n) for n in needed if os.path.lexists(os.path.join(root, n))]
        mounts = _targets(mask_arguments(hidden_paths, [root], needs))
        for place, (kind, target) in enumerate(mounts):
            # bwrap makes a mount point only where it can: never inside a folder already hidden
            assert not any(k == "tmpfs" and within(target, t) for k, t in mounts[:place]), (target, mounts)
            assert not any(within(need, target) for need in needs), (target, needs)  # Python stays
        covered = lambda p: any(within(p, t) for _, t in mounts)  # noqa: E731
        for path in hidden_paths:
            for folder, dirs, names in os.walk(path) if os.path.isdir(path) else [(None, [], [path])]:
                for name in names + dirs:
                    entry = name if folder is None else os.path.join(folder, name)
                    if not any(within(entry, n) or within(n, entry) for n in needs):
                        assert covered(entry), (entry, hidden_paths, needs, mounts)


# -- real sandboxes ----------------------------------------------------------------------------
@pytest.fixture
def fake_root(monkeypatch):
    """A folder the sandbox mounts read-only as if Python lived there (site-packages, say)."""
    base = Path(tempfile.mkdtemp(prefix="bpt-fake-root-", dir="/var/tmp"))
    base.chmod(0o755)
    roots = bwrap.python_roots() + [str(base)]
    monkeypatch.setattr(bwrap, "python_roots", lambda: roots)
    monkeypatch.setattr(bwrap, "_broken", [])
    yield base
    shutil.rmtree(base, ignore_errors=True)


READ = "def read(p):\n    return open(p).read()\n"


@needs_bwrap
def test_a_folder_inside_the_kits_hidden_tree_keeps_bubblewrap(fake_root):
    """The wheel's case: the questions folder and the submission's folder below it both hidden."""
    content = fake_root / "backprop_traps" / "grader" / "content"
    (content / "solutions").mkdir(parents=True)
    (content / "solutions" / "other.ipynb").write_text("secret")
    with Sandbox(READ, FAST, hide=[content, content / "solutions"]) as box:
        read = box.call("read", str(content / "solutions" / "other.ipynb"))
        assert box.isolation.startswith("bubblewrap"), box.isolation
    assert not read.ok and bwrap._broken == [], (read, bwrap._broken)


@needs_bwrap
def test_a_hidden_folder_that_holds_python_is_hidden_around_it(fake_root, monkeypatch):
    """`python -m venv .` in the learner's own folder: the folder is hidden, Python is not."""
    (fake_root / "learner" / "lib").mkdir(parents=True)
    (fake_root / "learner" / "lib" / "python.txt").write_text("python's")
    (fake_root / "learner" / "notes.txt").write_text("the learner's")
    needs = bwrap.python_needs() + [str(fake_root / "learner" / "lib")]
    monkeypatch.setattr(bwrap, "python_needs", lambda: needs)
    with Sandbox(READ, FAST, hide=[fake_root / "learner"]) as box:
        python = box.call("read", str(fake_root / "learner" / "lib" / "python.txt"))
        notes = box.call("read", str(fake_root / "learner" / "notes.txt"))
        assert box.isolation.startswith("bubblewrap"), box.isolation
    assert python.ok and python.value == "python's", python
    assert not notes.ok, notes


@needs_bwrap
def test_the_shipped_solution_graded_from_inside_the_package_gets_full_marks(fake_root):
    """`grade <site-packages>/backprop_traps/grader/content/solutions/01_routing_trap.ipynb`, with
    the installed kit's layout (its questions folder is the hidden content folder)."""
    from backprop_traps.grader.engine.run import grade_path
    content = fake_root / "backprop_traps" / "grader" / "content"
    (content / "solutions").mkdir(parents=True)
    notebook = content / "solutions" / "01_routing_trap.ipynb"
    shutil.copy(REPO / "solutions" / notebook.name, notebook)
    result = grade_path(notebook, root=content)
    assert result.error is None and result.isolation.startswith("bubblewrap"), (result.error, result.isolation)
    assert result.score == result.max_score > 0 and bwrap._broken == []


def test_the_editable_installs_package_path_is_the_repositorys_solution():
    """In an editable install the package's content folder is the repository's solutions/."""
    from backprop_traps.grader.engine.run import grade_path
    from backprop_traps.grader.loading.questions import solution_path
    result = grade_path(solution_path("routing_trap"))
    assert result.error is None and result.score == result.max_score > 0, result.error


@needs_bwrap
def test_a_sandbox_that_cannot_start_is_a_grader_error_never_a_0_nor_fewer_layers(monkeypatch):
    from backprop_traps.grader.engine.run import grade_path
    from backprop_traps.grader.learner.report import render
    from backprop_traps.grader.learner.report_html import render_html
    real = Sandbox._bwrap_argv

    def broken(self, env, resp_w):  # one sandbox's mounts fail, as the nested mask did
        argv, fds, deferred = real(self, env, resp_w)
        cut = argv.index("--")
        return argv[:cut] + ["--ro-bind", "/nonexistent-bpt-51", "/x"] + argv[cut:], fds, deferred
    monkeypatch.setattr(Sandbox, "_bwrap_argv", broken)
    monkeypatch.setattr(bwrap, "_broken", [])
    monkeypatch.setattr(bwrap, "_worked", [])  # as in a fresh `grade` process
    result = grade_path(REPO / "solutions" / "01_routing_trap.ipynb")
    assert result.internal_error and "sandbox could not start" in result.error, result.error
    assert result.tests == [] and bwrap._broken == [], bwrap._broken
    text, html = render(result, color=False), render_html(result, "01_routing_trap.ipynb")
    assert "The grader failed" in text and "Score: 0" not in text and "grader's fault" in text, text
    assert "The grader failed" in html and "Score: 0" not in html
    assert result.to_json()["grader_error"] is True
