"""The tools nbgrader starts by name are found beside the Python that runs the kit, even from a
venv that is not activated (issue 51: run as `<venv>/bin/python -m pytest`, 35 nbgrader tests
errored because `alembic` was looked up on a PATH that held no venv)."""
import os
import subprocess
import sys

from hypothesis import given, strategies as st

from backprop_traps.grader.batch.own_scripts import scripts_folders, with_own_scripts

BARE_PATH = os.pathsep.join(p for p in ("/usr/bin", "/bin") if os.path.isdir(p))


def test_nbgrader_finds_alembic_with_no_venv_on_path(tmp_path):
    """What a course's nbgrader_config.py does (configure), then the gradebook nbgrader opens
    (which runs `alembic heads` and `alembic upgrade`), with PATH stripped of every venv."""
    code = ("from traitlets.config import Config\n"
            "from backprop_traps.grader.batch.nbgrader_course import configure\n"
            "configure(Config())\n"
            "from nbgrader.api import Gradebook\n"
            f"Gradebook('sqlite:///{tmp_path / 'gradebook.db'}').close()\n"
            "print('GRADEBOOK OPEN')\n")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = BARE_PATH
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and "GRADEBOOK OPEN" in done.stdout, done.stderr[-2000:]


def test_the_interpreters_own_scripts_come_first():
    own = scripts_folders()
    assert own and own[0] == os.path.dirname(sys.executable)
    assert with_own_scripts(BARE_PATH).split(os.pathsep)[:len(own)] == own


@given(st.lists(st.sampled_from(["/usr/bin", "/bin", "/opt/x", "", os.path.dirname(sys.executable), "/a b"]),
                max_size=8))
def test_every_other_path_entry_is_kept_once_in_its_order(entries):
    path = os.pathsep.join(entries)
    out = with_own_scripts(path).split(os.pathsep)
    own = scripts_folders()
    assert out[:len(own)] == own
    assert out[len(own):] == [e for e in entries if e and e not in own]
