"""The message format between the grader and the child: JSON plus raw ``.npy`` arrays.

Nothing here can run code on load: JSON is data, and arrays are read with
``numpy.lib.format.read_array(..., allow_pickle=False)`` after their dtype is checked
against a whitelist. This module is imported by the grader *and* by the child worker (by
path), so it depends on the standard library and numpy only.

A frame is ``<8-byte little-endian length><payload>``. The payload is a JSON header
``{"msg": ..., "arrays": n}`` followed by ``n`` length-prefixed ``.npy`` blobs; inside
``msg`` an array is written ``{"__nd__": i}``, a tuple ``{"__tuple__": [...]}``.
"""
from __future__ import annotations

import io
import json
import struct

import numpy as np

_LEN = struct.Struct("<Q")
ALLOWED_KINDS = frozenset("biuf")  # bool, signed, unsigned, float: no objects, no structs
MAX_DEPTH = 32


class WireError(ValueError):
    """A message that does not decode; its text is safe to show."""


def _pack(obj, arrays, depth=0):
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, np.bool_):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        arr = np.asarray(obj)  # drops ndarray subclasses: only plain data crosses
        if arr.dtype.kind not in ALLOWED_KINDS:
            raise WireError(f"arrays of dtype {arr.dtype} cannot be returned")
        arrays.append(np.asarray(arr, order="C"))  # not ascontiguousarray: it makes 0-d arrays 1-d
        return {"__nd__": len(arrays) - 1}
    if isinstance(obj, tuple):
        return {"__tuple__": [_pack(x, arrays, depth + 1) for x in obj]}
    if isinstance(obj, list):
        return [_pack(x, arrays, depth + 1) for x in obj]
    if isinstance(obj, dict):
        return {str(k): _pack(v, arrays, depth + 1) for k, v in obj.items()}
    raise WireError(f"a value of type {type(obj).__name__} cannot be returned")


def encode(msg) -> bytes:
    """Encode a message (JSON-able values, tuples, numpy arrays) into one frame."""
    arrays: list[np.ndarray] = []
    header = json.dumps({"msg": _pack(msg, arrays), "arrays": len(arrays)}).encode()
    out = io.BytesIO()
    out.write(_LEN.pack(len(header)))
    out.write(header)
    for arr in arrays:
        blob = io.BytesIO()
        np.lib.format.write_array(blob, arr, allow_pickle=False)
        out.write(_LEN.pack(blob.tell()))
        out.write(blob.getbuffer())
    body = out.getvalue()
    return _LEN.pack(len(body)) + body


def _read_exact(buf: io.BytesIO, n: int) -> bytes:
    data = buf.read(n)
    if len(data) != n:
        raise WireError("message truncated")
    return data


def _read_array(blob: bytes) -> np.ndarray:
    f = io.BytesIO(blob)
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        _, _, dtype = np.lib.format.read_array_header_1_0(f)
    elif version == (2, 0):
        _, _, dtype = np.lib.format.read_array_header_2_0(f)
    else:
        raise WireError(f"array format {version} is not allowed")
    if dtype.kind not in ALLOWED_KINDS or dtype.hasobject:
        raise WireError(f"array dtype {dtype} is not allowed")
    f.seek(0)
    return np.lib.format.read_array(f, allow_pickle=False)


def _unpack(obj, arrays, depth=0):
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    if isinstance(obj, list):
        return [_unpack(x, arrays, depth + 1) for x in obj]
    if isinstance(obj, dict):
        if set(obj) == {"__nd__"}:
            index = obj["__nd__"]
            if not isinstance(index, int) or not 0 <= index < len(arrays):
                raise WireError("bad array reference")
            return arrays[index]
        if set(obj) == {"__tuple__"} and isinstance(obj["__tuple__"], list):
            return tuple(_unpack(x, arrays, depth + 1) for x in obj["__tuple__"])
        return {k: _unpack(v, arrays, depth + 1) for k, v in obj.items()}
    return obj


def decode(body: bytes):
    """Decode one frame's body (without its outer length prefix)."""
    buf = io.BytesIO(body)
    try:
        (hlen,) = _LEN.unpack(_read_exact(buf, _LEN.size))
        header = json.loads(_read_exact(buf, hlen))
        count = header["arrays"]
        if not isinstance(count, int) or count < 0:
            raise WireError("bad array count")
        arrays = []
        for _ in range(count):
            (n,) = _LEN.unpack(_read_exact(buf, _LEN.size))
            arrays.append(_read_array(_read_exact(buf, n)))
        return _unpack(header["msg"], arrays)
    except WireError:
        raise
    except (ValueError, KeyError, TypeError, RecursionError, struct.error) as e:
        raise WireError(f"malformed message ({type(e).__name__})") from None


def write_frame(fd: int, msg) -> None:
    """Write one encoded frame to a file descriptor (all of it)."""
    import os
    view = memoryview(encode(msg))
    while view:
        written = os.write(fd, view)
        view = view[written:]
