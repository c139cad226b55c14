"""Job scaling quantizes the first block at the MAX result and the rest as chunks are sent
(docs/hosts.md, session 22): the same payloads as quantizing everything at once, in any order
of asking, and the floats are dropped only when nothing is left to quantize or redo."""

from __future__ import annotations

import numpy as np
import pytest

from hosts import quantize as qz
from hosts.ina_codec import BLOCK_VALUES, FloatCodec
from hosts.ina_wire import contribution_payload


def codec_after_max(values: np.ndarray, *, k: int, fmt: str = "int32",
                    divisor: int = 4) -> FloatCodec:
    codec = FloatCodec(values, job=3, worker=1, n=4, k=k, pool_size=8, fmt=fmt, scaling="job",
                       divisor=divisor, first_position=5)
    codec.on_max(codec.max_offer().astype(np.int64) & 0xFFFFFFFF)
    return codec


def eager_payload(codec: FloatCodec, values: np.ndarray, chunk: int) -> bytes:
    """Chunk `chunk`'s CONTRIB by the definition: the vector, padded with zeros, quantized at
    the call's scale, chunk by chunk."""
    row = np.zeros(codec.per_chunk, np.float32)
    part = values[chunk * codec.per_chunk:(chunk + 1) * codec.per_chunk]
    row[:part.size] = part
    body = qz.quantize_scaled(row, codec.scale, codec.limit, codec.fmt)
    body = body.astype(qz.wire_dtype(codec.fmt)).tobytes()
    position = 5 + chunk
    return contribution_payload(job=3, worker=1, slot=position % 8, chunk=chunk,
                                ver=(position // 8) % 2, bmax=0, fmt=codec.format_code,
                                body=body)


@pytest.mark.parametrize("fmt", ["int32", "int8"])
def test_only_the_first_block_is_quantized_at_the_max_result(fmt: str) -> None:
    k = 16
    values = np.random.default_rng(1).standard_normal(BLOCK_VALUES * 3 + 77).astype(np.float32)
    codec = codec_after_max(values, k=k, fmt=fmt, divisor=4)
    per_block = BLOCK_VALUES // codec.per_chunk
    assert codec._quantized == per_block < codec.chunks
    order = [codec.chunks - 1, 0, per_block, per_block - 1, 2 * per_block + 3]
    for chunk in order + list(range(codec.chunks)):
        assert codec.contribution(chunk, (5 + chunk) % 8, ((5 + chunk) // 8) % 2) \
            == eager_payload(codec, values, chunk), chunk
    assert codec._quantized == codec.chunks


def test_the_floats_stay_until_the_last_block_when_no_redo_is_possible() -> None:
    values = np.random.default_rng(2).standard_normal(BLOCK_VALUES * 2).astype(np.float32)
    codec = codec_after_max(values, k=8, divisor=4)       # int32 at divisor n: no redo
    assert codec._values is not None                      # the second block still needs them
    codec.contribution(codec.chunks - 1, 0, 0)
    assert codec._values is None


def test_a_vector_beyond_the_scale_is_refused_when_its_block_is_quantized() -> None:
    """A later block that exceeds the agreed maximum (a corrupted MAX) still raises."""
    values = np.ones(BLOCK_VALUES * 2, np.float32)
    codec = FloatCodec(values, job=3, worker=1, n=4, k=8, pool_size=8, fmt="int32",
                       scaling="job", divisor=4, first_position=0)
    codec._values[-1, -1] = 1e6                           # after the maximum was taken
    codec.on_max(codec.max_offer().astype(np.int64) & 0xFFFFFFFF)
    codec.contribution(0, 0, 0)
    with pytest.raises(ValueError):
        codec.contribution(codec.chunks - 1, 0, 0)


@pytest.mark.parametrize("fmt, divisor", [("int32", 4), ("int16", 4), ("int8", 4), ("int8", 2)])
def test_sums_dequantized_by_blocks_as_results_come_equal_the_whole_vector(
        fmt: str, divisor: int) -> None:
    """Any arrival order; the last chunk short. With divisor < n (a redo is possible) the
    codec keeps the whole-vector pass at the end."""
    k = 16
    rng = np.random.default_rng(7)
    values = rng.standard_normal(BLOCK_VALUES * 2 + 333).astype(np.float32)
    codec = codec_after_max(values, k=k, fmt=fmt, divisor=divisor)
    assert (codec._pending is not None) == (divisor == 4)
    lanes = rng.integers(-2**31, 2**31, (codec.chunks, k), dtype=np.int64).astype(">i4")
    for chunk in rng.permutation(codec.chunks):
        codec.store(int(chunk), bytes(16) + lanes[chunk].tobytes())
    wire = np.frombuffer(lanes.tobytes(), qz.wire_dtype(fmt))[:values.size]
    expected = qz.dequantize_scaled(wire, codec.limit / codec.global_max)
    got = codec.result()
    assert got.dtype == np.float32 and got.shape == values.shape
    assert np.array_equal(got, expected, equal_nan=True)


def test_a_reused_table_gives_the_same_payloads_whatever_its_memory_held() -> None:
    from hosts.ina_wire import contribution_table
    args = dict(job=7, worker=2, fmt=0, first_position=61, pool_size=16, chunks=40,
                lane_dtype=np.dtype(">i4"), values_per_chunk=8)
    fresh = contribution_table(**args)
    scratch = {"contributions": np.full(fresh.nbytes + 100, 0xFF, np.uint8)}
    reused = contribution_table(**args, scratch=scratch)
    assert np.shares_memory(reused, scratch["contributions"])
    reused["lanes"] = fresh["lanes"]           # the caller writes every lane, as the codec does
    assert reused.tobytes() == fresh.tobytes()


def test_a_sessions_calls_reuse_their_internal_vectors_and_stay_exact() -> None:
    """Two calls of a session: the second reuses the first's payload and RESULT memory (no
    fresh pages per call), and both sums are right (a one-worker job answered in memory)."""
    from hosts.ina_session import InaSession
    session = InaSession(job=1, worker=0, n=1, k=8, pool_size=4, window=4, rto=0.1,
                         rto_max=0.4, max_retx=5)
    memory = []
    for call, length in enumerate((3000, 2000)):
        x = np.random.default_rng(call).standard_normal(length).astype(np.float32)
        queue, now = list(session.start(x, 0.0).send), 0.0
        while queue:
            payload = queue.pop(0)
            kind = {0: 1, 2: 3}[payload[0]]
            now += 1e-4
            reply = bytes((kind, payload[1] & 0x0D)) + payload[2:12] + b"\x00\x01" + payload[14:]
            queue.extend(session.receive(reply, now).send)
        assert session.done
        assert np.all(np.abs(session.result - x) <= session.error_bound())
        memory.append({name: id(buffer) for name, buffer in session._scratch.items()})
    assert memory[0] == memory[1] and set(memory[0]) == {"results", "contributions"}


def test_a_table_from_a_later_chunk_holds_each_chunks_payload() -> None:
    """`first_chunk`: row r is chunk first_chunk + r at position first_position + r, as
    `contribution_payload` makes it (a streamed call's later blocks)."""
    from hosts.ina_wire import contribution_payload, contribution_table
    rng = np.random.default_rng(3)
    for fmt, lane in ((0, ">i4"), (1, ">i2"), (2, "i1")):
        table = contribution_table(job=513, worker=7, fmt=fmt, first_position=1000, pool_size=24,
                                   chunks=50, lane_dtype=np.dtype(lane), values_per_chunk=16,
                                   first_chunk=900, scratch={})
        table["lanes"] = rng.integers(-100, 100, table["lanes"].shape)
        for r in range(50):
            position = 1000 + r
            assert table[r].tobytes() == contribution_payload(
                job=513, worker=7, slot=position % 24, chunk=900 + r, ver=(position // 24) % 2,
                bmax=0, fmt=fmt, body=table["lanes"][r].tobytes())
