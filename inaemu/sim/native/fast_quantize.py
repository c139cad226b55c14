"""A block of INA contributions quantized in one C pass (`fastquantize.c`), the very lanes.

Why: every streamed INA worker quantizes its whole vector a block of 64 Ki values at a time on
the simulation's thread, as its window opens. `hosts.quantize.quantize_scaled` (the one
definition) makes five NumPy passes and a float64 temporary, and the table's big-endian lanes
a sixth pass that swaps the bytes: ~100 us a block, 64 workers times over. One C pass that
writes each lane in place takes a fraction of that.

`install` (called by `inaemu.sim`) has `hosts.quantize.quantize_into` ask `quantize` first.
Before its first use, the C is compared with the definition on values made to sit where the
rounding and the clamp decide (ties, the limit, one past it, two past it, both signs, the
zero padding), for every lane format and several worker counts, and on random blocks. Any
difference and it is not used: `why_not()` says why, and NumPy quantizes as before (as it does
without a C compiler or with `INAEMU_NATIVE=0`). It declines a block with a NaN or a value past
the limit by more than one; the definition then decides (it raises for the latter).
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from hosts import ina_wire
from hosts import quantize as qz

PREFIX = "inaemu_fast_quantize_"
DONE = 0

_lock = threading.Lock()
_state: dict = {}


def install() -> None:
    """`hosts.quantize.quantize_into` quantizes with this module from now on, and
    `hosts.ina_wire.contribution_table` writes its headers with it (built and checked at
    their first use; NumPy wherever a check fails or no C can be built)."""
    qz.use_fast_quantize(quantize)
    ina_wire.use_header_writer(write_headers)


def why_not() -> str | None:
    """Why the C quantizer is not used (after it was first asked for), else None."""
    return _state.get("why_not")


def quantizer():
    """The checked C function `quantize(values, scale, limit, lanes) -> status`, or None."""
    if "quantize" not in _state:
        with _lock:
            if "quantize" not in _state:
                _state["quantize"] = _load()
    return _state["quantize"]


def quantize(values: np.ndarray, scale: float, limit: int, lanes: np.ndarray) -> bool:
    """`qz.quantize_into`'s lanes written by the C pass: True, or False for the caller to
    run the definition (no checked C, an input it does not take, a NaN, a value past the
    limit by more than one)."""
    c = quantizer()
    if c is None or not _takes(values, lanes):
        return False
    return c(values, float(scale), int(limit), lanes) == DONE


def header_writer():
    """The checked C function `contribution_headers(rows, *plan, first_position, pool_size,
    first_chunk)`, or None (`why_not_headers` says why)."""
    quantizer()
    return _state["headers"]


def why_not_headers() -> str | None:
    """Why the C header writer is not used (after it was first asked for), else None."""
    return _state.get("why_not_headers")


def write_headers(rows: np.ndarray, *plan_and_positions) -> bool:
    """`ina_wire.contribution_table`'s headers written by the C: True, or False for the
    caller to write them with NumPy (no checked C)."""
    c = header_writer()
    if c is None:
        return False
    c(rows, *plan_and_positions)
    return True


def _takes(values: np.ndarray, lanes: np.ndarray) -> bool:
    return (isinstance(values, np.ndarray) and values.dtype == np.float32
            and values.flags.c_contiguous and isinstance(lanes, np.ndarray)
            and lanes.ndim == 2 and lanes.flags.writeable and values.size <= lanes.size
            and lanes.dtype.kind == "i" and lanes.dtype.itemsize in (1, 2, 4))


def _load():
    """The checked quantizer (or None), with the checked header writer in _state."""
    from p4switch.runtime.cgen import nativebuild
    _state["headers"] = None
    if not nativebuild.enabled():
        _state["why_not"] = _state["why_not_headers"] = "C is off (INAEMU_NATIVE=0)"
        return None
    source = (Path(__file__).parent / "fastquantize.c").read_text()
    built = nativebuild.load_source(PREFIX, source)
    if built is None:
        _state["why_not"] = _state["why_not_headers"] = \
            "fastquantize.c could not be built: " + "; ".join(nativebuild.why_not.values())
        return None
    problem = headers_differ(built.contribution_headers)
    if problem is None:
        _state["headers"] = built.contribution_headers
    else:
        _state["why_not_headers"] = problem
    problem = differs_from_definition(built.quantize)
    if problem is not None:
        _state["why_not"] = problem
        return None
    return built.quantize


def headers_differ(c) -> str | None:
    """Where the C header writer's rows differ from `contribution_table`'s NumPy rows, or
    None: every field at its edges (the first and last job and worker, each lane format,
    pools of 1, 3 and 65,535 slots, positions across the versions' turn and far along, chunks
    up to the field's last), over rows that hold stale bytes (the header written, the rest
    left as it was)."""
    cases = [(0, 0, 0, 0, 1, 5, 0), (1, 2, 1, 2, 3, 7, 9), (0xFFFF, 0xFF, 2, 65533, 65535, 6, 4),
             (7, 3, 0, 1 << 40, 512, 1025, (1 << 32) - 1025),
             (300, 17, 1, 1023, 1024, 3, 1 << 20)]
    for job, worker, fmt, first_position, pool_size, chunks, first_chunk in cases:
        for values_per_chunk in (1, 8):
            lane_dtype = qz.wire_dtype(("int32", "int16", "int8")[fmt])
            kwargs = dict(job=job, worker=worker, fmt=fmt, first_position=first_position,
                          pool_size=pool_size, chunks=chunks, lane_dtype=lane_dtype,
                          values_per_chunk=values_per_chunk, first_chunk=first_chunk)
            stale = np.random.default_rng(chunks).integers(0, 256, 1 << 16, np.uint8)
            got_scratch, want_scratch = {"contributions": stale.copy()}, \
                {"contributions": stale.copy()}
            writer = ina_wire._header_writer
            try:
                ina_wire.use_header_writer(lambda rows, *rest: c(rows, *rest) or True)
                got = ina_wire.contribution_table(**kwargs, scratch=got_scratch)
                ina_wire.use_header_writer(None)
                want = ina_wire.contribution_table(**kwargs, scratch=want_scratch)
            finally:
                ina_wire.use_header_writer(writer)
            if got.tobytes() != want.tobytes() or not np.array_equal(
                    got_scratch["contributions"], want_scratch["contributions"]):
                return (f"fastquantize.c writes other CONTRIB headers than contribution_table: "
                        f"job {job}, worker {worker}, format {fmt}, position {first_position} "
                        f"of {pool_size}, {chunks} chunks from {first_chunk}")
    return None


def edge_values(limit: int, scale: float) -> np.ndarray:
    """float32 values whose products with `scale` sit where rounding and the clamp decide:
    ties below the limit, the limit itself and what rounds to it, up to one past it (the
    clamp), all with both signs, and zeros."""
    targets = [0.0, 0.5, 1.5, 2.5, 0.49999997, 1.0, 1e-30]
    for step in (-1.5, -1.0, -0.5, -0.25, 0.0, 0.25, 0.49, 0.5, 0.51, 0.75, 1.0, 1.49):
        targets.append(limit + step)
    products = np.array(targets, np.float64)
    values = (products / scale).astype(np.float32)
    values = values[np.abs(values.astype(np.float64) * scale) < limit + 1.5]
    return np.concatenate((values, -values, np.zeros(3, np.float32)))


def differs_from_definition(c) -> str | None:
    """What the C `quantize` writes otherwise than `qz.quantize_scaled`, or None."""
    rng = np.random.default_rng(7)
    for fmt in qz.FORMAT_BITS:
        for n in (1, 2, 3, 64, 1000):
            limit = (2 ** (qz.FORMAT_BITS[fmt] - 1) - 1) // n     # (qz.format_limit's)
            if limit < 3:
                continue
            per_chunk = 8 * qz.values_per_lane(fmt)
            for scale in (1.0, limit / 3.0, limit / 2.75):
                cases = [edge_values(limit, scale),
                         (rng.standard_normal(3 * per_chunk + 5) * (limit / scale / 4.5))
                         .astype(np.float32)]
                for values in cases:
                    got = _through_c(c, values, scale, limit, fmt, per_chunk)
                    want = _through_definition(values, scale, limit, fmt, per_chunk)
                    if got is None or not np.array_equal(got, want) \
                            or got.tobytes() != want.tobytes():
                        return (f"fastquantize.c quantizes otherwise than quantize_scaled: "
                                f"{fmt}, {n} workers, scale {scale!r}")
            one = np.ones(1, np.float32)       # (times limit + 2: two past the limit)
            if c(one, limit + 2.0, limit, np.zeros((1, 1), qz.wire_dtype(fmt))) == DONE:
                return f"fastquantize.c took a value past the {fmt} limit {limit}"
    nan = np.array([np.nan], np.float32)
    if c(nan, 1.0, 100, np.zeros((1, 1), qz.wire_dtype("int32"))) == DONE:
        return "fastquantize.c took a NaN"
    return None


def _table(rows: int, per_chunk: int, fmt: str) -> np.ndarray:
    """A CONTRIB-like table: 3 header bytes, then the lanes, then 1 byte (unaligned strides)."""
    layout = np.dtype([("head", "u1", (3,)), ("lanes", qz.wire_dtype(fmt), (per_chunk,)),
                       ("tail", "u1")])
    table = np.zeros(rows, layout)
    table["head"], table["tail"] = 0xA5, 0x5A
    return table


def _through_c(c, values, scale, limit, fmt, per_chunk) -> np.ndarray | None:
    rows = -(-values.size // per_chunk)
    table = _table(rows, per_chunk, fmt)
    table["lanes"] = 77                   # (stale lanes: the padding must be written too)
    if c(values, scale, limit, table["lanes"]) != DONE:
        return None
    if (table["head"] != 0xA5).any() or (table["tail"] != 0x5A).any():
        return None
    return table


def _through_definition(values, scale, limit, fmt, per_chunk) -> np.ndarray:
    rows = -(-values.size // per_chunk)
    table = _table(rows, per_chunk, fmt)
    padded = np.concatenate((values, np.zeros(rows * per_chunk - values.size, np.float32)))
    table["lanes"] = qz.quantize_scaled(padded.reshape(rows, per_chunk), scale, limit, fmt)
    return table
