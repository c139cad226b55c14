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

from hosts import quantize as qz

PREFIX = "inaemu_fast_quantize_"
DONE = 0

_lock = threading.Lock()
_state: dict = {}


def install() -> None:
    """`hosts.quantize.quantize_into` quantizes with this module from now on (built and
    checked at its first use; NumPy wherever the check fails or no C can be built)."""
    qz.use_fast_quantize(quantize)


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


def _takes(values: np.ndarray, lanes: np.ndarray) -> bool:
    return (isinstance(values, np.ndarray) and values.dtype == np.float32
            and values.flags.c_contiguous and isinstance(lanes, np.ndarray)
            and lanes.ndim == 2 and lanes.flags.writeable and values.size <= lanes.size
            and lanes.dtype.kind == "i" and lanes.dtype.itemsize in (1, 2, 4))


def _load():
    from p4switch.runtime.cgen import nativebuild
    if not nativebuild.enabled():
        _state["why_not"] = "C is off (INAEMU_NATIVE=0)"
        return None
    source = (Path(__file__).parent / "fastquantize.c").read_text()
    built = nativebuild.load_source(PREFIX, source)
    if built is None:
        _state["why_not"] = "fastquantize.c could not be built: " + \
            "; ".join(nativebuild.why_not.values())
        return None
    problem = differs_from_definition(built.quantize)
    if problem is not None:
        _state["why_not"] = problem
        return None
    return built.quantize


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
