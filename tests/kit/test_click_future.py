"""The CLI uses no Click name that Click 9 removes (issue 51): Click 8.2+ deprecates them, and a
kit that installs `click>=8.1` would stop on the day Click 9 ships."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Click's CHANGES for 8.2-8.4: "deprecated and will be removed in Click 9.0"
REMOVED_IN_CLICK_9 = ["get_text_stream", "get_binary_stream", "BaseCommand", "MultiCommand",
                      "OptionParser", "protected_args", "LazyFile", "KeepOpenFile",
                      "isolated_filesystem", "mix_stderr"]


def test_no_source_file_uses_a_click_name_that_click_9_removes():
    pattern = re.compile(r"\b(" + "|".join(REMOVED_IN_CLICK_9) + r")\b")
    found = []
    for folder in ("grader", "kernels", "benchmarks", "tests", "backprop_traps"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == Path(__file__).name:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if pattern.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "Click 9 removes these:\n" + "\n".join(found)
