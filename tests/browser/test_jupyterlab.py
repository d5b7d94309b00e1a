"""The learner's loop in a real JupyterLab, driven in headless Chromium (issue 51, items 1 and 9).

A JupyterLab server on a free local port, with a random token, in a temp folder holding a copy of
the routing_trap solution; Debian's ``chromium`` (never a browser Playwright downloads) opens it
at 1280 px and plays what a learner does:

1. Run All: the grade cell shows full marks, and under "compare with the reference:" the solution
   notebook and its kernels by the names their copies get here; no line of the report is wider
   than the output area (item 9).
2. Edit ``maxpool2d_backward`` into a wrong answer in the browser WITHOUT saving, run that cell,
   then the grade cell: the report says first that the kernel ran an unsaved edit, and shows no
   score and no full marks (item 1). The file on disk is still the saved one.

Run it with ``python -m pytest -m browser tests/browser -n 0`` (README: "Run the tests"). It skips,
saying why, without chromium (``apt-get install chromium``), Playwright (``pip install playwright``;
``playwright install`` is never needed) or JupyterLab (the ``[jupyter]`` extra). Set
``BACKPROP_TRAPS_SHOTS=folder`` to keep its screenshots there.
"""
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
STUB = "01_routing_trap.ipynb"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
GRADE_SECONDS = int(os.environ.get("BACKPROP_TRAPS_BROWSER_WAIT", 300))
"""How long Run All and the grade may take, on a busy 2-core machine: generous, never a timing test."""

# What a line of the report may not do: be wider than its box or the output area (at 1280 px a
# `white-space: pre` line was cut mid-word, and JupyterLab showed no scrollbar: every line wraps).
WIDER_THAN_THE_OUTPUT = """(report) => {
  const area = report.closest('.jp-OutputArea-output') || report.parentElement;
  const right = area.getBoundingClientRect().right + 1;
  const wide = [];
  for (const el of [report, ...report.querySelectorAll('*')]) {
    const style = getComputedStyle(el);
    if (el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0)  // cut, scrollbar or not
      wide.push(`${el.tagName} wider than itself: ${el.textContent.slice(0, 80)}`);
    if (style.wordBreak === 'break-all')  // JupyterLab's own <pre> style: words cut anywhere
      wide.push(`${el.tagName} breaks words anywhere: ${el.textContent.slice(0, 80)}`);
    if (el.getBoundingClientRect().right > right)
      wide.push(`${el.tagName} past the output area: ${el.textContent.slice(0, 80)}`);
  }
  return wide;
}"""


def _skip_without_the_tools():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip("no chromium here (Debian: apt-get install -y chromium)")
    pytest.importorskip("playwright.sync_api", reason="no Playwright here (pip install playwright)")
    pytest.importorskip("jupyterlab", reason="no JupyterLab here (the kit's [jupyter] extra)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _settings(folder: Path) -> Path:
    """JupyterLab user settings for the run: no autosave (the edit must stay unsaved), no news."""
    settings = folder / "lab-settings"
    for plugin, values in {"docmanager-extension/plugin": {"autosave": False},
                           "apputils-extension/notification": {"fetchNews": "false"}}.items():
        path = settings / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    return settings


@pytest.fixture
def jupyterlab(tmp_path):
    """(the notebook's URL, its folder): a JupyterLab server of this Python, for this test only."""
    _skip_without_the_tools()
    work, state = tmp_path / "work", tmp_path / "state"
    work.mkdir()
    shutil.copy(REPO / "solutions" / STUB, work / STUB)
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(_settings(state)),
               JUPYTERLAB_WORKSPACES_DIR=str(state / "workspaces"), JUPYTER_RUNTIME_DIR=str(state / "runtime"),
               JUPYTER_CONFIG_DIR=str(state / "config"), NO_COLOR="1")
    log = (tmp_path / "jupyter.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--port-retries=0",
         f"--IdentityProvider.token={token}", "--ServerApp.ip=127.0.0.1", f"--ServerApp.root_dir={work}",
         # nothing reaches the network: no update check, no extension manager's index
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.extension_manager=readonly"]
        + (["--allow-root"] if os.geteuid() == 0 else []),  # CI runs as root
        cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + GRADE_SECONDS  # a busy machine starts it slowly
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=5)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("JupyterLab did not start:\n" + (tmp_path / "jupyter.log").read_text()[-3000:])
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/lab/tree/{STUB}?token={token}", work
    finally:
        _end(server)
        log.close()


def _end(server: subprocess.Popen) -> None:
    """The server and the kernels it started (its own session), ended."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            pass
        try:
            server.wait(timeout=30)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture
def page(tmp_path):
    """A Chromium page at 1280 px, in a profile of its own."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=CHROMIUM, headless=True, args=ARGS,
            viewport={"width": 1280, "height": 1000})
        try:
            yield browser.pages[0] if browser.pages else browser.new_page()
        finally:
            browser.close()


def _shot(page, element, tmp_path: Path, name: str) -> None:
    keep = os.environ.get("BACKPROP_TRAPS_SHOTS")
    folder = Path(keep) if keep else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    element.scroll_into_view_if_needed()
    element.screenshot(path=str(folder / name))


STARTED = ("(() => { const p = document.querySelector('.jp-Notebook .jp-CodeCell .jp-InputPrompt');"
           " return !!p && /\\[(\\*|\\d+)\\]/.test(p.textContent); })()")
"""Whether the first code cell has run or is running (its prompt "[*]:" or "[1]:", not "[ ]:")."""


def _run_all(page) -> None:
    """Run → Run All Cells, again if JupyterLab dropped it: a run asked for before the kernel is
    there opens the "Select Kernel" dialog and is not run after it (as on a busy machine)."""
    for _ in range(3):
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        try:
            _wait_for(page, STARTED, seconds=90)
            return
        except AssertionError:
            continue
    _wait_for(page, STARTED, seconds=1)  # says what did not happen


def _grade_output(page):
    return page.locator(".jp-Notebook .jp-Cell").last.locator(".backprop-traps-report")


def _wait_for(page, ready: str, seconds: float = GRADE_SECONDS) -> None:
    """Until the JavaScript expression ``ready`` holds, saying yes to JupyterLab's "Select
    Kernel" dialog on the way (it asks when the kernel list comes late, as on a busy machine)."""
    deadline = time.monotonic() + seconds
    while not page.evaluate(ready):
        dialog = page.locator(".jp-Dialog", has_text="Select Kernel")
        if dialog.is_visible():
            dialog.locator(".jp-Dialog-button.jp-mod-accept").click()
        assert time.monotonic() < deadline, f"not within {seconds:g} s: {ready}"
        page.wait_for_timeout(1000)


IDLE = "!!document.querySelector(\".jp-Notebook-ExecutionIndicator[data-status='idle']\")"


def _settle(page, quiet: float = 8.0) -> None:
    """Until the kernel is idle and JupyterLab has asked nothing for ``quiet`` seconds. When the
    kernel list comes late (a busy machine) JupyterLab asks "Select Kernel" and, once answered,
    replaces the kernel: a Run All asked for before that is lost with the old one."""
    deadline, calm_since = time.monotonic() + GRADE_SECONDS, None
    while True:
        dialog = page.locator(".jp-Dialog", has_text="Select Kernel")
        if dialog.is_visible():
            dialog.locator(".jp-Dialog-button.jp-mod-accept").click()
            calm_since = None
        elif page.evaluate(IDLE):
            calm_since = calm_since or time.monotonic()
            if time.monotonic() - calm_since >= quiet:
                return
        else:
            calm_since = None
        assert time.monotonic() < deadline, f"the kernel did not settle within {GRADE_SECONDS} s"
        page.wait_for_timeout(500)


def _report_says(words: str) -> str:
    return ("(() => { const r = [...document.querySelectorAll('.jp-Notebook .jp-Cell')].pop()"
            f"?.querySelector('.backprop-traps-report'); return !!r && r.innerText.includes({json.dumps(words)}); }})()")


def test_the_learners_loop_in_jupyterlab(jupyterlab, page, tmp_path):
    try:
        _play(jupyterlab, page, tmp_path)
    except BaseException:
        folder = Path(os.environ.get("BACKPROP_TRAPS_SHOTS") or tmp_path)
        folder.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(folder / "failed.png"), timeout=60_000)  # what the page showed then
        raise


def _play(jupyterlab, page, tmp_path):
    url, work = jupyterlab
    saved = (work / STUB).read_text()
    page.goto(url)
    _settle(page)

    # 1. Run All: full marks, the reference's files named, every line inside the output area
    _run_all(page)
    _wait_for(page, _report_says("Score:"))
    report = _grade_output(page)
    text = report.inner_text()
    assert "Score: 12 / 12 points" in text and "Full marks on routing_trap" in text, text
    after = text.split("compare with the reference:", 1)[1]
    assert "the solution notebook: 01_routing_trap_solution.ipynb" in after, after
    assert "its Numba CUDA kernels: routing_trap_kernels.py" in after, after
    assert report.evaluate(WIDER_THAN_THE_OUTPUT) == []
    _shot(page, page.locator(".jp-Notebook .jp-Cell").last, tmp_path, "full-marks.png")

    # 2. The backward edited into a wrong answer in the browser, run, not saved; then the grade
    backward = page.locator(".jp-Notebook .jp-CodeCell", has_text="def maxpool2d_backward").first
    editor = backward.locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+End")
    page.keyboard.insert_text("\n_right = maxpool2d_backward\nmaxpool2d_backward = lambda *a: 2 * _right(*a)\n")
    page.keyboard.press("Shift+Enter")  # runs it, as a learner does
    grade_cell = page.locator(".jp-Notebook .jp-Cell").last
    grade_cell.locator(".cm-content").click()
    page.keyboard.press("Control+Enter")
    _wait_for(page, _report_says("not what this kernel ran"))
    report = _grade_output(page)
    text = report.inner_text()
    assert text.index("not what this kernel ran") < text.index("Score"), text
    assert "`maxpool2d_backward` is this kernel's from an edited, unsaved version" in text, text
    assert "Full marks" not in text and "12 / 12" not in text and "Score: none" in text, text
    assert "Visible tests of the saved file (not scored, not what ran above)" in text, text
    assert report.evaluate(WIDER_THAN_THE_OUTPUT) == []
    _shot(page, grade_cell, tmp_path, "unsaved-edit.png")
    assert (work / STUB).read_text() == saved  # JupyterLab did not save the edit
