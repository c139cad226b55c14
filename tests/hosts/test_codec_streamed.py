"""FloatCodec's streamed mode (hosts/ina_codec.py, docs/sim.md "Streamed runs"): the input read
a block at a time from a stream, a table of one block of payloads, the sum handed to a sink a
block at a time. The same local max, the same payload for every chunk and the same sums as
the whole-vector codec; refused where a chunk could be redone."""

from __future__ import annotations

import numpy as np
import pytest

from hosts import quantize as qz
from hosts.gradient_stream import GradientStream
from hosts.ina_codec import BLOCK_VALUES, FloatCodec
from hosts.ina_wire import HEADER_BYTES


def make(values, *, k: int = 8, fmt: str = "int32", sink=None, divisor: int = 3,
         scaling: str = "job") -> FloatCodec:
    return FloatCodec(values, job=1, worker=0, n=3, k=k, pool_size=4, fmt=fmt, scaling=scaling,
                      divisor=divisor, first_position=6, sink=sink)


class ArrayStream:
    """A stream over an array, counting what it was asked (reads are blocks, not the vector)."""

    def __init__(self, values: np.ndarray):
        self.values, self.size, self.largest_read = values, values.size, 0

    def read(self, first: int, end: int) -> np.ndarray:
        self.largest_read = max(self.largest_read, end - first)
        return self.values[first:end].copy()


@pytest.mark.parametrize("fmt", ["int32", "int16", "int8"])
@pytest.mark.parametrize("size", [1, 33, BLOCK_VALUES + 5, 3 * BLOCK_VALUES - 1])
def test_streamed_codec_sends_and_sums_what_the_whole_vector_codec_does(size, fmt):
    x = GradientStream(4, 1, size).read(0, size)
    whole = make(x, fmt=fmt)
    blocks: dict[int, np.ndarray] = {}
    stream = ArrayStream(x)
    streamed = make(stream, fmt=fmt, sink=lambda first, values: blocks.setdefault(first, values))
    assert streamed.local_max == whole.local_max and streamed.chunks == whole.chunks
    offer = np.full(8, qz.float32_bits(whole.local_max * 1.5), np.int64)
    whole.on_max(offer)
    streamed.on_max(offer)
    rng = np.random.default_rng(size)
    for chunk in range(whole.chunks):
        slot, ver = (6 + chunk) % 4, ((6 + chunk) // 4) % 2
        payload = whole.contribution(chunk, slot, ver)
        assert streamed.contribution(chunk, slot, ver) == payload
        # a RESULT of this chunk: any lanes will do, the same to both
        result = payload[:HEADER_BYTES] + rng.integers(-99, 99, whole.k, np.int32) \
            .astype(">i4").tobytes()
        whole.store(chunk, result)
        streamed.store(chunk, result)
    assert streamed.result() is None
    assert stream.largest_read <= BLOCK_VALUES
    sums = whole.result()
    assert np.array_equal(np.concatenate([blocks[first] for first in sorted(blocks)]), sums)
    for first, values in blocks.items():
        assert np.array_equal(streamed.error_bound(values),
                              whole.error_bound(sums)[first:first + values.size])


def test_the_streamed_table_holds_one_block():
    size = 3 * BLOCK_VALUES
    codec = make(ArrayStream(np.ones(size, np.float32)), sink=lambda first, values: None)
    codec.on_max(np.full(8, qz.float32_bits(1.0), np.int64))
    codec.contribution(codec.chunks - 1, 0, 0)       # (a block at a time, in order)
    table, row_bytes, first, ready = codec.table_rows()
    assert ready == codec.chunks and len(table) == (ready - first) * row_bytes
    assert ready - first <= BLOCK_VALUES // codec.per_chunk
    with pytest.raises(ValueError, match="in order"):
        codec.contribution(0, 2, 1)


@pytest.mark.parametrize("scaling, divisor", [("block", 3), ("job", 1)])
def test_a_streamed_call_needs_job_scaling_at_divisor_n(scaling, divisor):
    with pytest.raises(ValueError, match="job scaling and the divisor n"):
        make(ArrayStream(np.ones(10, np.float32)), fmt="int16", scaling=scaling,
             divisor=divisor, sink=lambda first, values: None)


def test_a_streamed_call_refuses_a_non_finite_value():
    x = np.ones(BLOCK_VALUES + 10, np.float32)
    x[BLOCK_VALUES + 3] = np.inf
    with pytest.raises(ValueError, match="non-finite"):
        make(ArrayStream(x), sink=lambda first, values: None)


def _rows_from_fields(codec: FloatCodec) -> tuple:
    """table_rows() as its fields give it (the tuple the codec keeps must always be this)."""
    if codec._table is None:
        return None, 0, 0, 0
    return codec._table, codec._packet_bytes, codec._table_first, codec._quantized


@pytest.mark.parametrize("streamed", [False, True])
def test_the_kept_table_rows_follow_every_change_of_the_table(streamed):
    """The tuple `table_rows()` returns (and the native core's session reads, `_table_rows`) is made
    again whenever the table, its first chunk or the chunks ready change: at the start, at the
    MAX result, at each block quantized on demand, at the release."""
    size = 3 * BLOCK_VALUES + 7
    x = GradientStream(4, 1, size).read(0, size)
    codec = make(ArrayStream(x), sink=lambda first, values: None) if streamed else \
        make(x, divisor=3)
    seen = [codec.table_rows()]
    assert seen[-1] == _rows_from_fields(codec)
    codec.on_max(np.full(8, qz.float32_bits(float(np.max(np.abs(x)))), np.int64))
    for chunk in range(codec.chunks):
        if chunk >= codec.table_rows()[3]:
            codec.contribution(chunk, chunk % 4, 0)
        rows = codec.table_rows()
        assert rows == _rows_from_fields(codec)
        if rows != seen[-1]:
            seen.append(rows)
    assert len(seen) >= (4 if streamed else 2)     # the start, the MAX, (each block)
    codec.release()
    assert codec.table_rows() == _rows_from_fields(codec) == (None, 0, 0, 0)
