"""INA blocks quantized in one C pass (inaemu/sim/native/fast_quantize.py): the lanes
`hosts.quantize.quantize_scaled` makes, in every lane format and byte order, in a table's
rows, with the last chunk's zero padding; what it does not take is left to the definition;
and a quantizer that differs is refused. The same for the table's CONTRIB headers written in
C: `hosts.ina_wire.contribution_table`'s NumPy bytes, or refused."""

import numpy as np
import pytest

from hosts import ina_wire
from hosts import quantize as qz
from inaemu.sim.native import fast_quantize, native_loop_class
from inaemu.sim.native import why_not as native_why_not

c_quantize = fast_quantize.quantizer()
# where the simulator's native core builds, this must too (the same compiler): a broken build
# or a failed check fails the first test below instead of skipping them all
needs_c = pytest.mark.skipif(native_loop_class() is None,
                             reason=f"no native core here: {native_why_not()}")


def _table(rows: int, per_chunk: int, dtype) -> np.ndarray:
    """Rows like the CONTRIB table's: a 16-byte header, the lanes, then 3 bytes (so that the
    rows' lanes are not 4-byte aligned after the first)."""
    layout = np.dtype([("head", "u1", (16,)), ("lanes", dtype, (per_chunk,)), ("tail", "u1", (3,))])
    table = np.zeros(rows, layout)
    table["head"], table["tail"], table["lanes"] = 0xA5, 0x5A, 99
    return table


def _definition(values, scale, limit, fmt, lanes_shape, dtype) -> np.ndarray:
    flat = np.concatenate((values, np.zeros(lanes_shape[0] * lanes_shape[1] - values.size,
                                            np.float32)))
    return qz.quantize_scaled(flat.reshape(lanes_shape), scale, limit, fmt).astype(dtype)


@needs_c
def test_the_c_quantizer_builds_and_passes_its_checks_where_the_native_core_does():
    assert c_quantize is not None, fast_quantize.why_not()
    assert qz._fast_quantize is fast_quantize.quantize


@needs_c
@pytest.mark.parametrize("fmt", ["int32", "int16", "int8"])
@pytest.mark.parametrize("n", [1, 2, 7, 64])
@pytest.mark.parametrize("byte_order", [">", "<"])
def test_c_lanes_are_the_definitions_in_a_tables_rows(fmt, n, byte_order):
    limit = (2 ** (qz.FORMAT_BITS[fmt] - 1) - 1) // n
    if limit < 1:
        pytest.skip("no limit")
    dtype = np.dtype(f"{byte_order}i{qz.FORMAT_BITS[fmt] // 8}")
    per_chunk = 32 * qz.values_per_lane(fmt)
    rng = np.random.default_rng(n)
    for count in (1, per_chunk, 5 * per_chunk - 3, 40 * per_chunk):
        values = rng.standard_normal(count).astype(np.float32)
        top = float(np.max(np.abs(values)))
        scale = limit / top                       # the job's scale: the largest at the limit
        rows = -(-count // per_chunk)
        table = _table(rows, per_chunk, dtype)
        assert fast_quantize.quantize(values, scale, limit, table["lanes"])
        want = _definition(values, scale, limit, fmt, (rows, per_chunk), dtype)
        assert table["lanes"].tobytes() == want.tobytes()
        assert (table["head"] == 0xA5).all() and (table["tail"] == 0x5A).all()
        plain = np.full((rows, per_chunk), 99, dtype)
        assert fast_quantize.quantize(values, scale, limit, plain)
        assert plain.tobytes() == want.tobytes()


@needs_c
@pytest.mark.parametrize("offset", [0, 1, 2, 3, 58])
def test_ties_and_the_clamp_are_the_definitions(offset):
    """Products that are exact halves round to even; those within one of the limit are
    clamped to it, both signs; in lanes at every byte alignment (a CONTRIB's lanes follow 58
    bytes of headers), enough of them for the vector loop and its remainder."""
    limit = 1000
    products = np.array([0.5, 1.5, 2.5, 3.5, 998.5, 999.5, 1000.0, 1000.4, 1000.5, 1000.9,
                         1001.0, 1001.4999, 0.0, -0.0, 1e-40], np.float64)
    values = np.concatenate((products, -products)).astype(np.float32)
    raw = np.full(offset + 4 * values.size + 5, 0xEE, np.uint8)
    lanes = np.ndarray((1, values.size), ">i4", raw, offset, (4 * values.size, 4))
    assert fast_quantize.quantize(values, 1.0, limit, lanes)
    assert (raw[:offset] == 0xEE).all() and (raw[offset + 4 * values.size:] == 0xEE).all()
    want = _definition(values, 1.0, limit, "int32", lanes.shape, lanes.dtype)
    assert lanes.tobytes() == want.tobytes()
    assert list(lanes[0, :4]) == [0, 2, 2, 4] and lanes[0, 6:12].tolist() == [1000] * 6


@needs_c
def test_what_the_c_pass_does_not_take_is_the_definitions():
    """A NaN, or a value more than one past the limit (the definition raises), is declined,
    and `quantize_into` then gives the definition's answer."""
    lanes = np.zeros((1, 4), ">i4")
    past = np.array([1.0, 2.0, 1003.0, 4.0], np.float32)
    assert not fast_quantize.quantize(past, 1.0, 1000, lanes)
    with pytest.raises(ValueError, match="exceed the agreed maximum"):
        qz.quantize_into(lanes, past, 1.0, 1000, "int32")
    for huge in (2.0 ** 51, 2.0 ** 52 + 2, 1e30, -3e38):     # past the lanes by far: declined
        assert not fast_quantize.quantize(np.array([1.0, huge], np.float32), 1e8, 1000, lanes)
    with np.errstate(invalid="ignore"):
        nan = np.array([1.0, np.nan, 3.0, 4.0], np.float32)
        assert not fast_quantize.quantize(nan, 1.0, 1000, lanes)
        qz.quantize_into(lanes, nan, 1.0, 1000, "int32")
        want = qz.quantize_scaled(nan.reshape(1, 4), 1.0, 1000, "int32")
    assert lanes.tobytes() == want.astype(">i4").tobytes()
    # inputs it does not take at all: float64 values, lanes of another kind
    assert not fast_quantize.quantize(past.astype(np.float64), 1.0, 1000, lanes)
    assert not fast_quantize.quantize(past, 1.0, 1000, np.zeros((1, 4), np.float32))


def test_quantize_into_is_the_definition_with_or_without_the_c_pass():
    values = np.random.default_rng(3).standard_normal(1000).astype(np.float32)
    scale = qz.format_limit("int16", 5) / float(np.max(np.abs(values)))
    results = []
    installed = qz._fast_quantize
    try:
        for fast in (None, installed):
            qz.use_fast_quantize(fast)
            table = _table(16, 64, ">i2")
            qz.quantize_into(table["lanes"], values, scale, qz.format_limit("int16", 5), "int16")
            results.append(table.tobytes())
    finally:
        qz.use_fast_quantize(installed)
    assert results[0] == results[1]


def test_a_quantizer_that_differs_from_the_definition_is_refused():
    """The check before the C pass is used: truncation for rounding, no clamp, the other byte
    order, half-away-from-zero ties, a value past the limit taken."""
    def writer(rule):
        def quantize(values, scale, limit, lanes):
            q = rule(values.astype(np.float64) * scale, limit)
            if np.isnan(q).any():
                return 2
            flat = np.zeros(lanes.size)
            flat[:values.size] = q
            with np.errstate(invalid="ignore"):    # (an unclamped lane may not fit)
                lanes[...] = flat.reshape(lanes.shape).astype(lanes.dtype)
            return 0
        return quantize

    def right(x, limit):
        q = np.rint(x)
        if np.abs(q).max(initial=0) > limit + 1:
            return np.full_like(q, np.nan)
        return np.clip(q, -limit, limit)

    def swapped(values, scale, limit, lanes):
        status = writer(right)(values, scale, limit, lanes)
        lanes[...] = lanes.byteswap()
        return status

    assert fast_quantize.differs_from_definition(writer(right)) is None
    wrong = {"truncated": writer(lambda x, limit: np.clip(np.trunc(x), -limit, limit)),
             "unclamped": writer(lambda x, limit: np.rint(x)),
             "ties away": writer(lambda x, limit: np.clip(np.sign(x) * np.floor(np.abs(x) + 0.5),
                                                          -limit, limit)),
             "past taken": writer(lambda x, limit: np.clip(np.rint(x), -limit, limit)),
             "swapped": swapped}
    for name, quantize in wrong.items():
        assert fast_quantize.differs_from_definition(quantize) is not None, name


@needs_c
def test_the_c_header_writer_builds_and_passes_its_check_where_the_native_core_does():
    assert fast_quantize.header_writer() is not None, fast_quantize.why_not_headers()
    assert ina_wire._header_writer is fast_quantize.write_headers


def _table_bytes(writer, scratch_bytes: np.ndarray, **kwargs) -> tuple[bytes, np.ndarray]:
    """contribution_table's table and its whole scratch memory, the headers by `writer`."""
    scratch = {"contributions": scratch_bytes.copy()}
    installed = ina_wire._header_writer
    try:
        ina_wire.use_header_writer(writer)
        table = ina_wire.contribution_table(**kwargs, scratch=scratch)
    finally:
        ina_wire.use_header_writer(installed)
    return table.tobytes(), scratch["contributions"]


@needs_c
def test_c_headers_are_numpys_over_random_tables():
    """Random jobs, workers, formats, pools, positions (far along and across the versions'
    turns) and chunk numbers up to the field's last, over stale memory: the same bytes, and
    nothing written past the table."""
    rng = np.random.default_rng(5)
    for _ in range(300):
        pool_size = int(rng.choice([1, 2, 3, 64, 511, 4096, 65535]))
        chunks = int(rng.integers(1, 2 * pool_size + 3)) if pool_size < 100 else \
            int(rng.integers(1, 300))
        first_chunk = int(rng.choice([0, int(rng.integers(0, 1 << 20)), (1 << 32) - chunks]))
        fmt = int(rng.integers(0, 3))
        kwargs = dict(job=int(rng.integers(0, 1 << 16)), worker=int(rng.integers(0, 256)),
                      fmt=fmt, first_position=int(rng.choice([0, int(rng.integers(0, 1 << 40))])),
                      pool_size=pool_size, chunks=chunks, first_chunk=first_chunk,
                      lane_dtype=qz.wire_dtype(("int32", "int16", "int8")[fmt]),
                      values_per_chunk=int(rng.choice([1, 4, 64])))
        stale = rng.integers(0, 256, 1 << 17, np.uint8)      # (holds the largest table)
        got, got_memory = _table_bytes(fast_quantize.write_headers, stale, **kwargs)
        want, want_memory = _table_bytes(None, stale, **kwargs)
        assert got == want, kwargs
        assert np.array_equal(got_memory, want_memory), kwargs


@needs_c
def test_the_c_header_writer_refuses_what_does_not_fit():
    """A chunk past its field, a pool past the slot's, a header longer than the row, a row
    array of another type: ValueError, and the rows untouched."""
    write = fast_quantize.header_writer()
    plan = ina_wire.header_plan(1, 2, 0)
    rows = np.full((4, 20), 7, np.uint8)
    bad = [((rows, *plan, 0, 8, (1 << 32) - 3), ValueError),          # chunk 2^32 on row 3
           ((rows, *plan, 70_000, 1 << 17, 0), ValueError),             # slot 70,000: 2 bytes
           ((np.zeros((4, 8), np.uint8), *plan, 0, 8, 0), ValueError),  # 16-byte header, 8 bytes
           ((np.zeros((4, 5), np.int32), *plan, 0, 8, 0), ValueError),
           ((rows, *plan, -1, 8, 0), ValueError),
           ((rows, *plan, 0, 8, (1 << 63) - 2), ValueError),           # chunk + 3 past 2^63 - 1
           ((rows, *plan, 0, 0, 0), ValueError)]
    for args, error in bad:
        with pytest.raises(error):
            write(*args)
        assert (rows == 7).all()
    write(rows, *plan, 0, 8, (1 << 32) - 4)       # (the last chunk fits)
    assert rows[3, 8:12].tobytes() == ((1 << 32) - 1).to_bytes(4, "big")


def test_a_header_writer_that_differs_from_numpy_is_refused():
    """The check before the C headers are used: the version bit never set, the slot not
    wrapped at the pool, the chunk little-endian, a byte written past the header."""
    def writer(change):
        def write(rows, template, flags_at, version_bit, slot_at, slot_size, chunk_at,
                  chunk_size, first_position, pool_size, first_chunk):
            for r in range(rows.shape[0]):
                position = first_position + r
                header = bytearray(template)
                header[flags_at] |= version_bit if (position // pool_size) % 2 else 0
                header[slot_at:slot_at + slot_size] = \
                    (position % pool_size).to_bytes(slot_size, "big")
                header[chunk_at:chunk_at + chunk_size] = \
                    (first_chunk + r).to_bytes(chunk_size, "big")
                rows[r, :len(header)] = np.frombuffer(bytes(change(header, position,
                                                                   pool_size, r)), np.uint8)
                if change is past:
                    rows[r, len(header)] = 0
        return write

    def same(header, position, pool_size, r):
        return header

    def no_version(header, position, pool_size, r):
        header[ina_wire.FIELD_OFFSETS["flags"]] &= ~ina_wire.FLAG_VER
        return header

    def unwrapped(header, position, pool_size, r):
        at = ina_wire.FIELD_OFFSETS["slot"]
        header[at:at + 2] = (position % 65536).to_bytes(2, "big")
        return header

    def little(header, position, pool_size, r):
        at = ina_wire.FIELD_OFFSETS["chunk"]
        header[at:at + 4] = header[at:at + 4][::-1]
        return header

    def past(header, position, pool_size, r):
        return header

    assert fast_quantize.headers_differ(writer(same)) is None
    for change in (no_version, unwrapped, little, past):
        assert fast_quantize.headers_differ(writer(change)) is not None, change.__name__


@pytest.mark.parametrize("loss", [0.0, 3.0])
def test_a_streamed_ina_run_is_the_same_run_with_or_without_the_c_pass(loss):
    """Every packet on every link (the trace holds each frame's CRC) and every record."""
    from inaemu.sim import SimJob, simulate
    from topologies.builders import star
    topology = star(4)
    jobs = [SimJob(1, tuple(h.name for h in topology.hosts))]
    runs, taken = [], []
    installed = qz._fast_quantize

    def counted(values, scale, limit, lanes):
        done = fast_quantize.quantize(values, scale, limit, lanes)
        taken.append(done)
        return done

    try:
        for fast in (None, counted):
            qz.use_fast_quantize(fast)
            trace: list[str] = []
            # 70,001 values: two codec blocks and a partial last chunk
            result = simulate(topology, jobs, algo="ina", trace=trace, keep_results=False,
                              size_bytes=4 * 70_001, seed=11, loss=loss, bw=1000, elems_k=64)
            runs.append((trace, [record.as_dict() for record in result.records]))
    finally:
        qz.use_fast_quantize(installed)
    (old_trace, old_records), (new_trace, new_records) = runs
    assert all(record["correct"] for record in new_records)
    assert len(taken) >= 2 and (all(taken) or c_quantize is None)
    assert new_trace == old_trace and new_records == old_records
