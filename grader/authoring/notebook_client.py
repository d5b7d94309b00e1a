"""A Jupyter kernel for running a notebook that no other process can take its ports from.

jupyter_client picks a kernel's five TCP ports by binding port 0 and letting go; a second
kernel started at the same moment (another `grade validate`, another test worker) can bind
the same port first, and the kernel dies with "Address already in use". On POSIX the kernel
listens on Unix sockets in a private folder of its own instead (jupyter_client's ``ipc``
transport): nothing else names that folder, so nothing can race for it.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import weakref


def notebook_client(nb, **kwargs):
    """An ``nbclient.NotebookClient`` for ``nb`` (``kwargs`` as for it) whose kernel talks over
    Unix sockets in its own folder (TCP on Windows, which has no ``ipc``)."""
    from nbclient import NotebookClient
    if os.name != "posix":
        return NotebookClient(nb, **kwargs)
    from traitlets.config import Config
    folder = tempfile.mkdtemp(prefix="bpt-kernel-")  # short: a socket's path has ~100 bytes
    config = Config({"KernelManager": {"transport": "ipc", "ip": os.path.join(folder, "k")}})
    client = NotebookClient(nb, config=config, **kwargs)
    weakref.finalize(client, shutil.rmtree, folder, True)
    return client
