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
    """An array whose .npy header text holds a NUL byte: numpy's parser answers it with
    SyntaxError or tokenize's TokenError, not ValueError (a hunt of the wire's kept headers)."""
    blob = _npy(np.zeros(1))  # magic, version, length, then the text: its opening brace a NUL
    _raw(_reply(b'{"__nd__": 0}', [blob[:10] + b"\0" + blob[11:]]))
    os._exit(0)


_solution_chain_forward = chain_forward


def chain_forward(*args):
    out = _attack()
    return out if out is not None else _solution_chain_forward(*args)
