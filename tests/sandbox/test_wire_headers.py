"""``.npy`` headers are written and parsed once per dtype and shape (``wire.KEPT_HEADERS``): the
bytes on the wire are numpy's own, a header parses as numpy parses it, and what is kept can
never make a frame decode otherwise than numpy alone would decode it."""
import io

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from backprop_traps.grader.sandbox import wire

DTYPES = st.sampled_from([np.dtype(c).newbyteorder(o) for c in "?bhilqBHILQefdg" for o in "<>="])
SHAPES = st.lists(st.integers(0, 5), max_size=4).map(tuple)


def numpy_header(arr) -> bytes:
    f = io.BytesIO()
    np.lib.format.write_array_header_1_0(f, np.lib.format.header_data_from_array_1_0(arr))
    return f.getvalue()


@settings(max_examples=300, deadline=None)
@given(DTYPES, SHAPES)
def test_a_written_header_is_numpys_own_every_time(dtype, shape):
    arr = np.zeros(shape, dtype=dtype)
    for _ in range(2):  # written, then kept
        assert wire._npy_header(arr) == numpy_header(arr)


@settings(max_examples=300, deadline=None)
@given(DTYPES, SHAPES, st.integers(0, 2**31))
def test_a_frame_decodes_the_same_when_its_headers_are_kept(dtype, shape, seed):
    arr = np.random.default_rng(seed).integers(0, 100, size=shape).astype(dtype)
    body = wire.encode({"a": arr, "b": [arr, arr.copy()]})[8:]
    for _ in range(2):
        got = wire.decode(body)
        for out in (got["a"], *got["b"]):
            assert out.dtype == arr.dtype and out.shape == arr.shape
            assert out.tobytes() == arr.tobytes()


def _frame(blob: bytes) -> bytes:
    """The body of a frame whose message is the one array ``blob``."""
    header = b'{"msg": {"__nd__": 0}, "arrays": 1}'
    return wire._LEN.pack(len(header)) + header + wire._LEN.pack(len(blob)) + blob


def _blob(arr, header: bytes | None = None) -> bytes:
    return (header or numpy_header(arr)) + arr.tobytes()


def test_a_kept_header_still_needs_exactly_its_bytes():
    arr = np.arange(6.0)
    wire._read_array(memoryview(_blob(arr)))  # kept now
    for data in (arr.tobytes()[:-8], arr.tobytes() + b"\0" * 8, b""):
        with pytest.raises(wire.WireError, match="does not match"):
            wire.decode(_frame(numpy_header(arr) + data))


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 200), st.integers(0, 255))
def test_one_changed_byte_of_a_kept_header_is_parsed_anew(position, value):
    arr = np.arange(6, dtype=np.int32)
    header = numpy_header(arr)
    wire._read_array(memoryview(_blob(arr)))
    changed = bytearray(header)
    if position >= len(changed):
        return
    changed[position] = value
    blob = bytes(changed) + arr.tobytes()
    try:
        expected = np.lib.format.read_array(io.BytesIO(blob), allow_pickle=False)
    except Exception:  # noqa: BLE001 (numpy refuses it: so must the wire)
        expected = None
    try:
        got = wire.decode(_frame(blob))
    except wire.WireError:
        got = None
    if got is not None:  # what the wire accepts, numpy reads the same way
        assert expected is not None and got.dtype == expected.dtype and got.shape == expected.shape
        assert got.tobytes() == expected.tobytes()


def test_an_object_header_is_refused_however_often_it_comes():
    header = numpy_header(np.zeros(2)).replace(b"'<f8'", b"'|O' ")
    for _ in range(3):
        with pytest.raises(wire.WireError):
            wire.decode(_frame(header + b"\0" * 16))


def test_what_is_kept_is_bounded(monkeypatch):
    monkeypatch.setattr(wire, "_parsed", {})
    monkeypatch.setattr(wire, "_written", {})
    for n in range(3 * wire.KEPT_HEADERS):
        arr = np.zeros(n)
        wire._read_array(memoryview(_blob(arr, wire._npy_header(arr))))
        assert len(wire._parsed) <= wire.KEPT_HEADERS and len(wire._written) <= wire.KEPT_HEADERS


@pytest.mark.parametrize("text", [b"\0", b"{'descr': '<f8', \0", b"\xff\xfe", b"{" * 40])
def test_a_hostile_header_text_is_a_malformed_message_never_another_error(text):
    """numpy's header parse raises SyntaxError or tokenize's TokenError on some texts (a NUL
    byte): the wire says the message is malformed, as for any other bad header."""
    header = b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text
    with pytest.raises(wire.WireError):
        wire.decode(_frame(header))


def test_a_header_that_claims_4_gb_is_refused_without_copying_the_frame(monkeypatch):
    copied = []
    real = wire._parse_header
    monkeypatch.setattr(wire, "_parse_header", lambda blob: copied.append(len(wire._header_bytes(blob))) or real(blob))
    blob = b"\x93NUMPY\x02\x00" + (2**32 - 1).to_bytes(4, "little") + b"{" + b" " * (1 << 20)
    with pytest.raises(wire.WireError):
        wire.decode(_frame(blob))
    assert copied and max(copied) <= 65536 + 16
