"""Lane formats and per-block scaling (docs/formats.md, docs/protocol.md §5): the error bounds as
properties over many random vectors, and whole calls through the real p4src/ina.p4 (in-process,
with loss, flat and tree), including chunks the switch flags as overflowed and the workers redo.

hypothesis is not installed in this venv, so the property tests draw their cases from seeded
numpy generators (300 cases: every format x scaling x divisor, several shapes and spreads).
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from hosts import quantize as qz
from hosts.errors import UsageError
from hosts.ina_codec import FloatCodec
from hosts.ina_session import InaSession
from hosts.ina_wire import HEADER_BYTES, InaPacket, Kind, WireError, block_fields, decode, encode
from tests.hosts.inproc import ina_switch, star_network, tree_network

FORMATS = tuple(qz.FORMAT_BITS)


def heavy_tailed(rng, length: int, *, scale: float = 1e-3, outliers: float = 0.002,
                 boost: float = 1000.0) -> np.ndarray:
    """Normal values with a few large outliers (a gradient's shape: most entries small)."""
    x = rng.standard_normal(length) * scale
    count = max(1, int(length * outliers))
    x[rng.choice(length, count, replace=False)] *= boost
    return x.astype(np.float32)


# ---- a model of the switch, for the properties ---------------------------------------------

def model_allreduce(vectors, *, n, k, pool, fmt, scaling, divisor):
    """The protocol without a network: the MAX round as a lane-wise unsigned max, each chunk
    summed per sub-lane modulo 2^bits with the overflow flag of the switch (any partial sum
    out of range, in worker order) and the bmax fields max-combined; then the redo pass."""
    codecs = [FloatCodec(v, job=1, worker=w, n=n, k=k, pool_size=pool, fmt=fmt,
                         scaling=scaling, divisor=divisor) for w, v in enumerate(vectors)]
    offers = [c.max_offer().view(np.uint32) for c in codecs]
    patterns = np.max(offers, axis=0).astype(np.int64)
    for c in codecs:
        c.on_max(patterns)
    bits = qz.FORMAT_BITS[fmt]
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1

    def one_pass(keys):
        for key in keys:
            payloads = [c.contribution(key, key % pool, 0) for c in codecs]
            parts = [np.frombuffer(p, qz.wire_dtype(fmt), offset=HEADER_BYTES).astype(np.int64)
                     for p in payloads]
            total, overflow = parts[0].copy(), False
            for part in parts[1:]:
                total += part
                overflow |= bool(np.any((total < low) | (total > high)))
                total = (total - low) % (2 ** bits) + low
            bmax = max(block_fields(p)[0] for p in payloads)
            result = payloads[0][:HEADER_BYTES] + total.astype(qz.wire_dtype(fmt)).tobytes()
            for c in codecs:
                c.on_result(key, result, bmax, overflow)

    chunks = codecs[0].chunks
    one_pass(range(chunks))
    redo = [c.end_of_pass() for c in codecs]
    assert len(set(redo)) == 1
    one_pass(range(chunks, chunks + redo[0]))
    results = [c.result() for c in codecs]
    for r in results[1:]:
        assert np.array_equal(r, results[0])
    return results[0], codecs[0].error_bound(results[0]), codecs[0]


def random_case(seed: int):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 9))
    fmt = FORMATS[seed % 3]
    scaling = ("job", "block")[(seed // 3) % 2]
    divisor = n if fmt == "int32" or seed % 4 else int(rng.integers(1, n + 1))
    k = int(rng.choice([4, 8, 32]))
    pool = int(rng.integers(1, 6))
    length = int(rng.integers(1, 700))
    spread = 10.0 ** rng.uniform(-30, 30)
    kind = seed % 5
    vectors = []
    for _ in range(n):
        if kind == 0:
            v = heavy_tailed(rng, length, scale=spread)
        elif kind == 1:       # every worker's values of one sign: sums grow like n, not sqrt(n)
            v = np.abs(rng.standard_normal(length) * spread).astype(np.float32)
        elif kind == 2:       # blocks of very different magnitudes, some all zero
            v = (rng.standard_normal(length) * spread
                 * 10.0 ** rng.integers(-8, 8, length // 8 + 1).repeat(8)[:length])
            v[rng.random(length) < 0.3] = 0
            v = v.astype(np.float32)
        elif kind == 3:
            v = np.zeros(length, np.float32)
        else:                 # extremes of float32
            v = rng.choice(np.float32([3e38, -3e38, 1e-45, 0, 1, -2.5]), length)
        vectors.append(v.astype(np.float32))
    return vectors, dict(n=n, k=k, pool=pool, fmt=fmt, scaling=scaling, divisor=divisor)


@pytest.mark.parametrize("seed", range(300))
def test_error_bound_holds_per_element(seed: int) -> None:
    vectors, case = random_case(seed)
    with np.errstate(over="ignore"):
        result, bound, codec = model_allreduce(vectors, **case)
        exact = np.sum([v.astype(np.float64) for v in vectors], axis=0)
    finite = np.abs(exact) < float(np.finfo(np.float32).max) / 2
    error = np.abs(result.astype(np.float64) - exact)
    assert np.all(error[finite] <= bound[finite]), case
    assert codec.unresolved_overflows == 0
    if case["divisor"] == case["n"]:
        assert codec.redo_chunks == []          # the safe divisor never overflows


@pytest.mark.parametrize("fmt", FORMATS)
def test_block_bound_is_per_block(fmt: str) -> None:
    """A block of small values keeps a fine scale next to a block with a large outlier; with
    one scale per job the outlier coarsens every block."""
    k, n = 4, 2
    per_chunk = k * qz.values_per_lane(fmt)
    rng = np.random.default_rng(7)
    vectors = [np.concatenate([rng.standard_normal(per_chunk) * 1e-3,
                               rng.standard_normal(per_chunk)]).astype(np.float32)
               for _ in range(n)]
    vectors[0][per_chunk] = 1000.0
    job = model_allreduce(vectors, n=n, k=k, pool=2, fmt=fmt, scaling="job", divisor=n)[1]
    block = model_allreduce(vectors, n=n, k=k, pool=2, fmt=fmt, scaling="block",
                            divisor=n)[1]
    assert np.max(block[:per_chunk]) < np.max(job[:per_chunk]) / 1e3
    # the outlier's block: the job's scale, but for the bfloat16 rounding of its max (2^-7)
    assert np.max(block[per_chunk:]) <= (1 + 2.0 ** -7) * np.max(job[per_chunk:])


def test_block_max_codes() -> None:
    maxima = np.array([0.0, 0.75, 1.0, 1.0 + 2.0 ** -20, 3.4e38, 1e-45, 2.0 ** -127, 3.2e38])
    codes = qz.block_max_codes(maxima)
    assert codes.tolist() == [0, 0x3F40, 0x3F80, 0x3F81, 0x7F80, 1, 0x0040, 0x7F71]
    values = qz.block_max_values(codes)
    assert np.all(values >= maxima) and np.all(values[1:] <= maxima[1:] * (1 + 2.0 ** -7)
                                                 + (maxima[1:] < 1e-30) * 1e-38)
    assert values[4] == 2.0 ** 128
    # order of codes is the order of the maxima (what the switch's max relies on)
    rng = np.random.default_rng(1)
    xs = np.abs(rng.standard_normal(2000) * 10.0 ** rng.uniform(-40, 38, 2000))
    order = np.argsort(xs, kind="stable")
    assert np.all(np.diff(qz.block_max_codes(xs[order]).astype(int)) >= 0)
    assert qz.format_limit("int8", 4) == 31 and qz.format_limit("int16", 3) == 10922
    with pytest.raises(ValueError, match="cannot hold"):
        qz.format_limit("int8", 200)


def test_wire_carries_bmax_format_and_overflow() -> None:
    packet = InaPacket(kind=Kind.RESULT, job=2, worker=1, slot=3, chunk=9, values=[1, 2, 3, 4],
                       count=4, bmax=0xABCD, fmt=2, overflow=True)
    payload = encode(packet)
    assert payload[14:16] == b"\xab\xcd" and payload[1] == 0x08 | 0x10 and payload[5] == 0
    assert block_fields(payload) == (0xABCD, 2, True)
    assert decode(payload) == packet
    with pytest.raises(ValueError, match="fmt"):
        InaPacket(kind=Kind.CONTRIB, job=1, worker=0, slot=0, chunk=0, values=[0] * 4, fmt=3)
    with pytest.raises(WireError, match="format 3"):
        decode(payload[:1] + bytes([0x0C]) + payload[2:])
    assert struct.unpack_from("!H", payload, 14)[0] == 0xABCD


def test_session_refuses_bad_encodings() -> None:
    base = dict(job=1, worker=0, n=4, k=4, pool_size=2, window=2, rto=0.1, rto_max=0.4,
                max_retx=2)
    for bad, match in (({"fmt": "int4"}, "fmt"), ({"scaling": "lane"}, "scaling"),
                       ({"divisor": 5}, "divisor"), ({"divisor": 2}, "int16 or int8")):
        with pytest.raises(UsageError, match=match):
            InaSession(**base, **bad)
    with pytest.raises(UsageError, match="cannot hold"):
        InaSession(**{**base, "n": 200, "worker": 0}, fmt="int8")


# ---- whole calls through ina.p4 --------------------------------------------------------------

def run_star(vectors, *, k=8, pool=4, loss=0.05, calls=2, seed=2, **encoding):
    n = len(vectors)
    sw = ina_switch(k, job=3, n=n, pool_size=pool)
    sessions = [InaSession(job=3, worker=w, n=n, k=k, pool_size=pool, window=pool, rto=0.01,
                           rto_max=0.1, max_retx=40, **encoding) for w in range(n)]
    net = star_network(sw, sessions, loss=loss, seed=seed)
    outcomes = []
    for _ in range(calls):
        net.run([s.start(v, net.now) for s, v in zip(sessions, vectors)])
        assert all(s.done for s in sessions)
        for s in sessions[1:]:
            assert np.array_equal(s.result, sessions[0].result)
        outcomes.append((sessions[0].result, sessions[0].error_bound()))
    return sessions, outcomes


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("scaling", ["job", "block"])
def test_calls_through_ina_p4_stay_within_the_bound(fmt: str, scaling: str) -> None:
    rng = np.random.default_rng(11)
    vectors = [heavy_tailed(rng, 1500) for _ in range(4)]
    exact = np.sum([v.astype(np.float64) for v in vectors], axis=0)
    sessions, outcomes = run_star(vectors, fmt=fmt, scaling=scaling)
    for result, bound in outcomes:
        assert np.all(np.abs(result - exact) <= bound)
    assert outcomes[0][0].tobytes() == outcomes[1][0].tobytes()    # positions carried over
    assert sessions[0].counters.retransmissions > 0                 # loss was recovered
    values = sum(s.counters.bytes_sent for s in sessions)
    assert values > 0


def test_packed_lanes_send_fewer_bytes() -> None:
    rng = np.random.default_rng(3)
    vectors = [heavy_tailed(rng, 4096) for _ in range(2)]
    sent = {}
    for fmt in FORMATS:
        sessions, _ = run_star(vectors, fmt=fmt, scaling="block", loss=0.0, calls=1)
        sent[fmt] = sessions[0].counters.bytes_sent
    assert sent["int16"] < 0.6 * sent["int32"] and sent["int8"] < 0.6 * sent["int16"]


@pytest.mark.parametrize("fmt", ["int16", "int8"])
def test_overflowed_chunks_are_redone_at_the_safe_scale(fmt: str) -> None:
    """divisor 1: four workers whose values share a sign overflow the packed lanes; the
    switch flags those cells, every worker redoes the same chunks, the result is in bound."""
    rng = np.random.default_rng(5)
    vectors = [np.abs(rng.standard_normal(600)).astype(np.float32) + 0.5 for _ in range(4)]
    exact = np.sum([v.astype(np.float64) for v in vectors], axis=0)
    sessions, outcomes = run_star(vectors, fmt=fmt, scaling="block", divisor=1)
    redos = {s.counters.overflow_redos for s in sessions}
    assert len(redos) == 1 and redos.pop() > 0
    for result, bound in outcomes:
        assert np.all(np.abs(result - exact) <= bound)
    assert sessions[0]._codec.unresolved_overflows == 0


@pytest.mark.parametrize("fmt", FORMATS)
def test_tree_carries_block_maxima_and_flags(fmt: str) -> None:
    rng = np.random.default_rng(8)
    vectors = [heavy_tailed(rng, 900) for _ in range(4)]
    vectors[1][:50] = 3.0          # aligned values: int8/int16 at divisor 1 overflow somewhere
    vectors[2][:50] = 3.0
    exact = np.sum([v.astype(np.float64) for v in vectors], axis=0)
    divisor = 4 if fmt == "int32" else 1
    sessions = [InaSession(job=3, worker=w % 2, n=4, k=8, pool_size=4, window=4, rto=0.01,
                           rto_max=0.1, max_retx=40, fmt=fmt, scaling="block", divisor=divisor)
                for w in range(4)]
    net = tree_network(8, job=3, leaves=2, per_leaf=2, pool_size=4, sessions=sessions,
                       loss=0.05, seed=4)
    net.run([s.start(v, net.now) for s, v in zip(sessions, vectors)])
    result, bound = sessions[0].result, sessions[0].error_bound()
    assert all(np.array_equal(s.result, result) for s in sessions)
    assert np.all(np.abs(result - exact) <= bound)
    if fmt != "int32":
        assert sessions[0].counters.overflow_redos > 0


def test_allreduce_config_names_a_bad_encoding() -> None:
    from hosts.api import AllreduceConfig, ConfigError
    for bad, name in (({"fmt": "int4"}, "config.fmt"), ({"scaling": "lane"}, "config.scaling"),
                      ({"divisor": 9}, "config.divisor")):
        with pytest.raises(ConfigError, match=name):
            AllreduceConfig(job=1, worker=0, n=4, **bad)
    assert AllreduceConfig(job=1, worker=0, n=4, fmt="int8", scaling="block", divisor=2).fmt \
        == "int8"


def test_a_flag_at_the_safe_divisor_is_counted_not_redone() -> None:
    """At divisor n no sum can overflow, so a flagged RESULT is a faulty peer: redoing the chunk
    at the same scale would change nothing; it is counted and its sums used."""
    codec = FloatCodec(np.ones(8, np.float32), job=1, worker=0, n=2, k=4, pool_size=2,
                       fmt="int16", scaling="job", divisor=2)
    codec.on_max(codec.max_offer().view(np.uint32).astype(np.int64))
    payload = codec.contribution(0, 0, 0)
    codec.on_result(0, payload, 0, True)
    assert codec.end_of_pass() == 0 and codec.unresolved_overflows == 1
