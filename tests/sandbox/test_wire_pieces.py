"""A frame's small pieces are joined before they are written (``wire.coalesced``): the bytes on
the wire are exactly the frame's, in order, with far fewer writes."""
import os

import numpy as np
from hypothesis import given, settings, strategies as st

from backprop_traps.grader.sandbox import wire

SIZES = st.lists(st.integers(0, 3 * wire.SMALL_PIECES), max_size=12)


@settings(max_examples=200, deadline=None)
@given(SIZES)
def test_the_bytes_are_the_frames_in_order(sizes):
    chunks = [bytes([i % 251]) * n for i, n in enumerate(sizes)]
    out = wire.coalesced(chunks)
    assert b"".join(bytes(c) for c in out) == b"".join(chunks)
    assert len(out) <= len(chunks) + 1
    # never two small pieces in a row: they would have been joined
    small = [memoryview(c).nbytes < wire.SMALL_PIECES for c in out]
    assert not any(a and b for a, b in zip(small, small[1:]))


def test_a_large_array_is_still_sent_by_reference():
    big = np.arange(1 << 15, dtype=np.float64)  # 256 KiB
    out = wire.coalesced(wire.encode_chunks({"x": big, "y": np.ones(3)}))
    assert any(isinstance(c, memoryview) and c.obj is big for c in out)


def test_a_call_with_small_arrays_is_one_write():
    msg = {"op": "call", "fn": "f", "args": [np.ones((4, 4)), np.zeros(3), 2.0, "s"]}
    assert len(wire.coalesced(wire.encode_chunks(msg))) == 1


def test_what_is_written_decodes_as_the_message():
    msg = {"op": "call", "args": [np.arange(12.0).reshape(3, 4), np.ones(1 << 14), [1, 2]]}
    r, w = os.pipe()
    try:
        import threading
        writer = threading.Thread(target=wire.write_frame, args=(w, msg))
        writer.start()
        got = wire.decode(wire.read_frame_body(lambda n: os.read(r, n), 1 << 30), from_grader=True)
        writer.join()
    finally:
        os.close(r)
        os.close(w)
    assert got["op"] == "call" and got["args"][2] == [1, 2]
    assert np.array_equal(got["args"][0], msg["args"][0]) and np.array_equal(got["args"][1], msg["args"][1])
