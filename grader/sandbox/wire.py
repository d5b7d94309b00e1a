"""The message format between the grader and the child: JSON plus raw ``.npy`` arrays.

Nothing here can run code on load: JSON is data, and an array's ``.npy`` header is parsed by
numpy's own header reader (a literal parse, no pickles), its dtype checked against a whitelist
before its data is taken as exactly the bytes that follow. Headers are written and parsed once
per dtype and shape (``KEPT_HEADERS``): the same bytes always mean the same array layout. This
module is imported by the grader *and* by the child worker (by path), so it depends on the
standard library and numpy only.

A frame is ``<8-byte little-endian length><payload>``. The payload is a JSON header
``{"msg": ..., "arrays": n}`` followed by ``n`` length-prefixed ``.npy`` blobs; inside
``msg`` an array is written ``{"__nd__": i}``, a tuple ``{"__tuple__": [...]}``.
"""
from __future__ import annotations

import io
import json
import struct


_LEN = struct.Struct("<Q")
ALLOWED_KINDS = frozenset("biuf")  # bool, signed, unsigned, float: no objects, no structs
MAX_DEPTH = 32
MAX_HEADER = 4 * 1024 * 1024
"""Largest JSON part of a frame: numbers and structure are small, arrays travel as .npy."""
MAX_ARRAYS = 4096
MAX_NODES = 200_000
"""Most JSON values (lists, dicts, numbers, strings) in one header: bounds the objects the
grader builds from what the child sends, whatever the byte size."""


_numpy = None


def numpy():
    """numpy, bound on first use and kept: the grader imports this module before numpy (it
    starts a sandbox first), and the worker binds it before any learner code runs, so a
    submission that replaces ``sys.modules["numpy"]`` cannot change what encodes its answers."""
    global _numpy
    if _numpy is None:
        import numpy as module
        _numpy = module
    return _numpy


class WireError(ValueError):
    """A message that does not decode; its text is safe to show."""


def _pack(obj, arrays, depth=0):
    np = numpy()
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


def encode_chunks(msg) -> list:
    """Encode a message (JSON-able values, tuples, numpy arrays) as the pieces of one frame,
    arrays' data by reference (no copy: a child's answer costs no second copy to send)."""
    np = numpy()
    arrays: list[np.ndarray] = []
    header = json.dumps({"msg": _pack(msg, arrays), "arrays": len(arrays)}).encode()
    chunks: list = [_LEN.pack(len(header)), header]
    for arr in arrays:
        head = _npy_header(arr)
        data = _bytes_of(arr) if arr.size else b""
        chunks += [_LEN.pack(len(head) + len(data)), head, data]
    return [_LEN.pack(sum(len(c) for c in chunks))] + chunks


def _bytes_of(arr) -> memoryview:
    """``arr``'s bytes as they are, by reference; through a flat uint8 view where memoryview
    refuses the dtype (a long double in an explicit byte order)."""
    try:
        return memoryview(arr).cast("B")
    except (ValueError, TypeError):
        return memoryview(arr.reshape(-1).view(numpy().uint8))


KEPT_HEADERS = 256
"""``.npy`` headers kept, each way: a grading sends the same few dtypes and shapes hundreds of
times, and numpy writes (or parses) each header anew, slower than the array it describes."""
_written: dict = {}
_parsed: dict = {}


def _keep(table: dict, key, value) -> None:
    if len(table) >= KEPT_HEADERS:
        table.clear()
    table[key] = value


def _npy_header(arr) -> bytes:
    """numpy's own ``.npy`` header for ``arr`` (C order, a plain dtype), written once per
    dtype and shape."""
    key = (arr.dtype.str, arr.shape)
    head = _written.get(key)
    if head is None:
        np = numpy()
        data = np.lib.format.header_data_from_array_1_0(arr)
        f = io.BytesIO()
        if len(repr(data)) < 65000:
            np.lib.format.write_array_header_1_0(f, data)
        else:
            np.lib.format.write_array_header_2_0(f, data)
        head = f.getvalue()
        _keep(_written, key, head)
    return head


SMALL_PIECES = 1 << 16
"""Pieces of a frame shorter than this are joined before they are written: a call's frame is
mostly small pieces (lengths, headers, small arrays), one write each, and one syscall (and one
wake-up of the reader) per piece cost more than copying them."""


def coalesced(chunks) -> list:
    """``chunks`` with runs of small ones joined (large arrays' data still by reference)."""
    out, pending, size = [], [], 0
    for chunk in chunks:
        n = memoryview(chunk).nbytes
        if n >= SMALL_PIECES:
            if pending:
                out.append(b"".join(pending))
                pending, size = [], 0
            out.append(chunk)
            continue
        pending.append(chunk)
        size += n
        if size >= SMALL_PIECES:
            out.append(b"".join(pending))
            pending, size = [], 0
    if pending:
        out.append(b"".join(pending))
    return out


def encoded_size(msg) -> int:
    """The bytes ``msg`` takes on the wire (its frame included)."""
    return sum(len(c) for c in encode_chunks(msg))


def encode(msg) -> bytes:
    """One frame as bytes (for tests and small messages)."""
    return b"".join(bytes(c) for c in encode_chunks(msg))


def _read_exact(buf: memoryview, pos: int, n: int) -> tuple[memoryview, int]:
    if n > len(buf) - pos:
        raise WireError("message truncated")
    return buf[pos:pos + n], pos + n


def _read_array(blob: memoryview) -> np.ndarray:
    """One .npy blob, checked before anything is allocated: the version, a whitelisted
    dtype, and a shape whose size is exactly the bytes that follow (a header may claim
    2**40 elements; it is refused, not allocated). The array owns a copy of its data."""
    np = numpy()
    key = _header_bytes(blob)
    parsed = _parsed.get(key)
    if parsed is None:
        parsed = _parse_header(blob)
        if len(key) <= 256:  # an answer's header, byte for byte the same, parses the same
            _keep(_parsed, key, parsed)
    shape, fortran, dtype, offset = parsed
    count = 1
    for dim in shape:
        count *= dim
    data = blob[offset:]
    if count * dtype.itemsize != len(data):
        raise WireError(f"an array of shape {tuple(shape)} does not match its {len(data)} bytes")
    arr = np.frombuffer(data, dtype=dtype, count=count).reshape(shape, order="F" if fortran else "C")
    return arr.copy(order="K")


def _header_bytes(blob: memoryview) -> bytes:
    """The bytes of the header that ``blob`` claims (its magic, version, length and text), as
    far as the blob holds them: a key for ``_parsed``, never trusted beyond being compared."""
    if len(blob) < 10:
        return bytes(blob)
    if bytes(blob[6:8]) == b"\x02\x00" and len(blob) >= 12:
        end = 12 + struct.unpack("<I", blob[8:12])[0]
    else:
        end = 10 + struct.unpack("<H", blob[8:10])[0]
    return bytes(blob[:min(end, len(blob), 65536 + 16)])  # a claimed 4 GB header copies no more


def _parse_header(blob: memoryview) -> tuple:
    """numpy's parse of a ``.npy`` header: (shape, fortran order, dtype, where the data starts),
    a whitelisted dtype only."""
    np = numpy()
    f = io.BytesIO(bytes(blob[:min(len(blob), 65536 + 16)]))  # the header only
    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise WireError(f"array format {version} is not allowed")
    except WireError:
        raise
    except Exception:  # noqa: BLE001 (numpy's parse of hostile text: a NUL raises SyntaxError or
        raise WireError("malformed array header") from None  # tokenize's TokenError, not ValueError)
    if dtype.kind not in ALLOWED_KINDS or dtype.hasobject or dtype.names is not None:
        raise WireError(f"array dtype {dtype} is not allowed")
    return tuple(shape), fortran, dtype, f.tell()


def _unpack(obj, arrays, depth=0, used=None):
    """JSON back into values; each array may be referenced once only (one 1 MB array named
    700 times must not become 700 MB when the grader makes an array of the list)."""
    used = set() if used is None else used
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    if isinstance(obj, list):
        return [_unpack(x, arrays, depth + 1, used) for x in obj]
    if isinstance(obj, dict):
        if set(obj) == {"__nd__"}:
            index = obj["__nd__"]
            if not isinstance(index, int) or not 0 <= index < len(arrays) or index in used:
                raise WireError("bad array reference")
            used.add(index)
            return arrays[index]
        if set(obj) == {"__tuple__"} and isinstance(obj["__tuple__"], list):
            return tuple(_unpack(x, arrays, depth + 1, used) for x in obj["__tuple__"])
        return {k: _unpack(v, arrays, depth + 1, used) for k, v in obj.items()}
    return obj


def _count_nodes(header: bytes) -> int:
    """An upper bound of the JSON values in ``header``, counted before parsing it."""
    return header.count(b"[") + header.count(b"{") + header.count(b",") + 1


def decode(body, from_grader: bool = False) -> object:
    """Decode one frame's body (without its outer length prefix). Bounded: the JSON part's
    size, nesting and value count, the number of arrays, and each array's size. The
    bounds on the JSON part protect the grader from the child; ``from_grader`` (the worker
    reading the grader's requests) lifts them, so a large honest source (a 4 MB literal
    table) loads."""
    buf = memoryview(body)
    try:
        raw, pos = _read_exact(buf, 0, _LEN.size)
        (hlen,) = _LEN.unpack(raw)
        if hlen > MAX_HEADER and not from_grader:
            raise WireError(f"the message's JSON part ({hlen} bytes) is over {MAX_HEADER} bytes")
        header, pos = _read_exact(buf, pos, hlen)
        header = bytes(header)
        if not from_grader and _count_nodes(header) > MAX_NODES:
            raise WireError(f"the message holds more than {MAX_NODES} values")
        header = json.loads(header)
        count = header["arrays"]
        if not isinstance(count, int) or not 0 <= count <= MAX_ARRAYS:
            raise WireError("bad array count")
        arrays = []
        for _ in range(count):
            raw, pos = _read_exact(buf, pos, _LEN.size)
            (n,) = _LEN.unpack(raw)
            blob, pos = _read_exact(buf, pos, n)
            arrays.append(_read_array(blob))
        return _unpack(header["msg"], arrays)
    except WireError:
        raise
    except (ValueError, KeyError, TypeError, RecursionError, struct.error, MemoryError) as e:
        raise WireError(f"malformed message ({type(e).__name__})") from None


def read_frame_body(read, limit: int) -> bytearray:
    """Read one frame's body with ``read(n) -> bytes`` (b"" at end of stream: EOFError),
    into a single buffer: no second copy while it arrives."""
    def exact_into(view):
        got = 0
        while got < len(view):
            chunk = read(min(len(view) - got, 1 << 20))
            if not chunk:
                raise EOFError
            view[got:got + len(chunk)] = chunk
            got += len(chunk)
    head = bytearray(_LEN.size)
    exact_into(memoryview(head))
    (n,) = _LEN.unpack(head)
    if n > limit:
        raise WireError(f"a message of {n} bytes is over the {limit // (1024 * 1024)} MB limit")
    body = bytearray(n)
    exact_into(memoryview(body))
    return body


def write_frame(fd: int, msg) -> None:
    """Write one encoded frame to a file descriptor (all of it)."""
    import os
    for chunk in coalesced(encode_chunks(msg)):
        view = memoryview(chunk)
        while view:
            written = os.write(fd, view)
            view = view[written:]
