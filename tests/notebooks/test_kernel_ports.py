"""Kernels that test workers (or two `grade validate` runs) start at the same moment cannot
take each other's ports: each listens on Unix sockets in a folder of its own
(grader/authoring/notebook_client.py). CI once lost a run to "Address already in use"."""
import gc
import os
import threading

import nbformat
import pytest

from backprop_traps.grader.authoring.notebook_client import notebook_client

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix sockets: POSIX only (TCP elsewhere)")


def _notebook(code):
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])


def test_the_kernel_listens_on_sockets_in_a_folder_of_its_own():
    client = notebook_client(_notebook("1"), timeout=60, kernel_name="python3")
    manager = client.create_kernel_manager()
    assert manager.transport == "ipc"
    folder = os.path.dirname(manager.ip)
    assert os.path.basename(folder).startswith("bpt-kernel-") and os.listdir(folder) == []
    assert os.stat(folder).st_mode & 0o077 == 0  # nobody else's process can name a socket there
    del client, manager
    gc.collect()
    assert not os.path.exists(folder)  # removed with its client


def test_kernels_started_at_once_all_run():
    notebooks = [_notebook(f"print({i} * 7)") for i in range(3)]
    errors = []

    def run(nb):
        try:
            notebook_client(nb, timeout=120, kernel_name="python3").execute()
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(repr(e))

    threads = [threading.Thread(target=run, args=(nb,)) for nb in notebooks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [nb.cells[0].outputs[0]["text"] for nb in notebooks] == ["0\n", "7\n", "14\n"]
