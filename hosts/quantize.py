"""Float32 gradients to int32 and back, with a scale that makes the switch's sums overflow-free.

docs/protocol.md §5: the workers agree on M, the largest |x| of any worker (the MAX round), and
each quantizes with `scale = floor((2^31 - 1) / n) / M`, so every |q_i| <= floor((2^31 - 1) / n)
and no partial or final sum of n contributions leaves the int32 range. The summed integers are
turned back into floats by one float64 division, then rounded to float32.

The error of the result against the exact sum is at most `error_bound(M, n, y)` per element:
n half-units of quantization (each worker rounds once) plus half a float32 ulp of the result,
times a tiny relative slack (`FLOAT64_SLACK`) that covers the float64 multiplications, the
division and the float64 reference sum the result is compared with (see docs/hosts.md).
"""

from __future__ import annotations

import struct
from typing import Callable

import numpy as np

INT32_MAX = 2**31 - 1
MAX_WORKERS = 0xFFFF      # a RESULT's 16-bit `count` (all workers of a job's tree)
# Relative slack on the quantization term for float64 rounding (a few ulp64 per step, against
# a term that is at least 2^-31 of n·M; 2^-16 is very loose and still invisible in practice).
FLOAT64_SLACK = 2.0**-16


def check_workers(n: int) -> int:
    """n as a validated worker count (1..65535): the scale divides the int32 range by it."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_WORKERS:
        raise ValueError(f"worker count must be an integer from 1 to {MAX_WORKERS}, got {n!r}")
    return n


def as_float32_vector(values, *, finite: bool = True) -> np.ndarray:
    """The input as a 1-D float32 array; `inf`/`nan` refused (no finite scale covers them).
    `finite=False`: the caller checks that itself (`non_finite_error`), in a pass it makes
    anyway (FloatCodec's block maxima)."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"expected a 1-D vector, got an array of shape {array.shape}")
    if array.dtype != np.float32:
        raise ValueError(f"expected float32 values, got dtype {array.dtype}")
    # max and min are NaN if any element is, and ±inf if one is: two passes, no temporary
    if finite and array.size and not (np.isfinite(array.max()) and np.isfinite(array.min())):
        raise non_finite_error(array)
    return array


def non_finite_error(array: np.ndarray) -> ValueError:
    """The error for a float32 vector holding inf or NaN: which element is the first."""
    bad = int(np.flatnonzero(~np.isfinite(array))[0])
    return ValueError(f"cannot quantize a non-finite value: element {bad} is {array[bad]}")


def local_max(values: np.ndarray) -> float:
    """The largest |x| of a finite float32 vector (0.0 when empty): what a worker offers."""
    array = as_float32_vector(values)
    return float(np.max(np.abs(array))) if array.size else 0.0


def float32_bits(x: float) -> int:
    """The IEEE-754 bit pattern of a non-negative float32 (integer order = numeric order)."""
    value = np.float32(x)
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"a MAX value must be finite and non-negative, got {x!r}")
    return int(value.view(np.uint32))


def float32_from_bits(bits: int) -> float:
    """The float32 whose bit pattern is `bits`; ValueError unless finite and non-negative."""
    if not 0 <= bits <= 0x7F7FFFFF:
        raise ValueError(f"0x{bits:08x} is not the pattern of a finite non-negative float32")
    return float(np.uint32(bits).view(np.float32))


def quantization_limit(n: int) -> int:
    """The largest |q| a worker may send so that n of them cannot overflow int32."""
    return INT32_MAX // check_workers(n)


def scale_for(global_max: float, n: int) -> float:
    """The job-wide scale for this call; 1.0 when every value is zero (any scale is exact)."""
    if not np.isfinite(global_max) or global_max < 0:
        raise ValueError(f"the global maximum must be finite and >= 0, got {global_max!r}")
    limit = quantization_limit(n)
    return 1.0 if global_max == 0 else limit / float(global_max)


def quantize(values: np.ndarray, scale: float, n: int) -> np.ndarray:
    """round(x · scale) as int32, clamped to ±limit (the clamp only absorbs float64 rounding)."""
    array = as_float32_vector(values)
    limit = quantization_limit(n)
    scaled = np.rint(array.astype(np.float64) * scale)
    if array.size and np.max(np.abs(scaled)) > limit + 1:
        raise ValueError("values exceed the agreed maximum: the scale does not cover them")
    return np.clip(scaled, -limit, limit).astype(np.int32)


def dequantize(sums: np.ndarray, scale: float) -> np.ndarray:
    """Summed integers back to float32: float64 division, then one rounding to float32.

    A sum beyond the float32 range becomes ±inf, as a float32 addition would make it.
    """
    exact = np.asarray(sums, dtype=np.int64).astype(np.float64) / scale
    with np.errstate(over="ignore"):
        return exact.astype(np.float32)


def ulp32(values: np.ndarray) -> np.ndarray:
    """The float32 spacing at |y| (towards larger magnitude), as float64."""
    return np.spacing(np.abs(np.asarray(values, dtype=np.float32))).astype(np.float64)


def error_bound(global_max: float, n: int, result: np.ndarray) -> np.ndarray:
    """Per element: |y - Σx| <= n·M/(2·floor((2^31-1)/n))·(1 + slack) + ulp32(y)/2."""
    quantization = n * 0.5 / scale_for(global_max, n) if global_max else 0.0
    return quantization * (1.0 + FLOAT64_SLACK) + ulp32(result) / 2


# --- lane formats and per-block scaling (docs/formats.md, docs/protocol.md §5.2) -------------

FORMAT_BITS = {"int32": 32, "int16": 16, "int8": 8}
FORMAT_CODES = {"int32": 0, "int16": 1, "int8": 2}     # flags bits 2-3 on the wire
SCALINGS = ("job", "block")
BMAX_INFINITY = 0x7F80   # the bmax code of 2^128 (bfloat16's +inf pattern)
_WIRE_DTYPES = {"int32": np.dtype(">i4"), "int16": np.dtype(">i2"), "int8": np.dtype("i1")}


def check_format(fmt: str) -> str:
    if fmt not in FORMAT_BITS:
        raise ValueError(f"format must be one of {', '.join(FORMAT_BITS)}, got {fmt!r}")
    return fmt


def values_per_lane(fmt: str) -> int:
    """Values one 32-bit wire lane carries: 1, 2 or 4."""
    return 32 // FORMAT_BITS[check_format(fmt)]


def wire_dtype(fmt: str) -> np.dtype:
    """The values as they are on the wire (big-endian, packed high half first)."""
    return _WIRE_DTYPES[check_format(fmt)]


def format_limit(fmt: str, divisor: int) -> int:
    """The largest |q| a worker may send: divisor of them cannot leave the format's range."""
    if isinstance(divisor, bool) or not isinstance(divisor, int) or divisor < 1:
        raise ValueError(f"divisor must be a positive integer, got {divisor!r}")
    limit = (2 ** (FORMAT_BITS[check_format(fmt)] - 1) - 1) // divisor
    if limit < 1:
        raise ValueError(f"{fmt} lanes cannot hold a sum of {divisor} values (limit 0)")
    return limit


def block_max_codes(maxima) -> np.ndarray:
    """Per block, its max |x| as the `bmax` field: the float32's top 16 bits (a bfloat16),
    rounded up, so the code's value is >= the max and at most 2^-7 above it (relative). Codes
    of non-negative numbers order like the numbers, so the switch's max of codes is the code
    of the max. 0 only for an all-zero block; 0x7F80 (bfloat16's infinity) stands for 2^128,
    the first power of two above every float32."""
    wide = np.asarray(maxima, dtype=np.float64)
    narrow = wide.astype(np.float32)
    narrow = np.where(narrow.astype(np.float64) < wide, np.nextafter(narrow, np.float32(np.inf)),
                      narrow).astype(np.float32)
    bits = narrow.view(np.uint32).astype(np.int64)
    codes = (bits >> 16) + ((bits & 0xFFFF) != 0)
    return np.minimum(codes, BMAX_INFINITY).astype(np.uint16)


def block_max_values(codes) -> np.ndarray:
    """What `bmax` codes stand for, as float64 (an upper bound of the block's max |x|)."""
    codes = np.asarray(codes, dtype=np.uint32)
    values = (codes << 16).view(np.float32).astype(np.float64)
    return np.where(codes >= BMAX_INFINITY, 2.0 ** 128, values)


def block_max_value(code: int) -> float:
    """`block_max_values` of one code, without numpy (it runs once per packet)."""
    if code >= BMAX_INFINITY:
        return 2.0 ** 128
    return struct.unpack("!f", struct.pack("!I", code << 16))[0]


def block_scales(codes, limit) -> np.ndarray:
    """limit / bmax per block (limit: one, or one per block), so |x| <= bmax quantizes to at
    most `limit`; an all-zero block (code 0) gets scale limit·2^149 (its integers are 0 at any
    scale, and its bound is then ~0)."""
    values = block_max_values(codes)
    limit = np.asarray(limit, dtype=np.float64)
    return np.where(values > 0, limit / np.where(values > 0, values, 1.0), limit * 2.0 ** 149)


def quantize_scaled(values: np.ndarray, scales, limit: int, fmt: str) -> np.ndarray:
    """round(x · scale) in the format's dtype (scale per element or one for all), clamped to
    ±limit, which only absorbs float64 rounding of a value that is within its bound."""
    # In place on one float64 temporary (the product is float64 whatever the input's dtype):
    # the same numbers as casting first, with a quarter of the memory traffic.
    scaled = np.multiply(values, scales, dtype=np.float64)
    np.rint(scaled, out=scaled)
    top = max(scaled.max(), -scaled.min()) if scaled.size else 0.0
    if top > limit + 1:
        raise ValueError("values exceed the agreed maximum: the scale does not cover them")
    if top > limit:           # (rarely: a clip of a block already in range changes nothing)
        np.clip(scaled, -limit, limit, out=scaled)
    return scaled.astype(wire_dtype(fmt).newbyteorder("="))


# fast(values, scale, limit, lanes) -> True when it wrote `quantize_into`'s lanes, else False
FastQuantize = Callable[[np.ndarray, float, int, np.ndarray], bool]
_fast_quantize: FastQuantize | None = None


def use_fast_quantize(fast: FastQuantize | None) -> None:
    """`quantize_into` asks `fast` first from now on (None: NumPy alone). `fast` must write
    exactly `quantize_scaled`'s lanes or return False: the simulator installs one it has
    checked so (inaemu/sim/native/fast_quantize.py)."""
    global _fast_quantize
    _fast_quantize = fast


def quantize_into(lanes: np.ndarray, values: np.ndarray, scale: float, limit: int,
                  fmt: str) -> None:
    """lanes[...] = `quantize_scaled`(values, scale, limit, fmt) with one scale for all, the
    values (float32, in lane order) zero-padded to the lanes' size (a block of CONTRIB rows
    whose last chunk is short); by the fast quantizer when one is installed and takes them."""
    fast = _fast_quantize
    if fast is not None and fast(values, scale, limit, lanes):
        return
    flat = values.reshape(-1)
    if flat.size < lanes.size:
        flat = np.concatenate((flat, np.zeros(lanes.size - flat.size, flat.dtype)))
    lanes[...] = quantize_scaled(flat.reshape(lanes.shape), scale, limit, fmt)


def dequantize_scaled(sums: np.ndarray, scales, out: np.ndarray | None = None) -> np.ndarray:
    """Sums over scales (per element or one), in float64, then one rounding to float32 (into
    `out` when given: a float32 array of the sums' shape)."""
    # One ufunc pass: computed in float64 (exact for any int32 sum) and rounded once into the
    # float32 output, without a whole-vector float64 temporary.
    sums = np.asarray(sums)
    if out is None:
        out = np.empty(sums.shape, np.float32)
    with np.errstate(over="ignore"):
        np.divide(sums, scales, out=out, dtype=np.float64, casting="unsafe")
    return out


ERROR_BLOCK = 1 << 16    # elements per block of error_bound_scaled (its temporaries stay in cache)


def error_bound_scaled(n: int, scales, result: np.ndarray, per: int = 1) -> np.ndarray:
    """Per element: n half-units of its block's scale (each worker rounds once), with the
    float64 slack, plus half a float32 ulp of the result (docs/protocol.md §5.2). `scales`:
    one for all, or one per `per` consecutive elements (the last group may be short)."""
    values = np.asarray(result, dtype=np.float32)
    scales = np.asarray(scales, dtype=np.float64)
    if values.ndim != 1:
        quantization = n * 0.5 / scales
        return quantization * (1.0 + FLOAT64_SLACK) + ulp32(values) / 2
    # The bound of an agent's call is a whole float64 vector: written a block at a time into
    # its output, with every temporary a block long (whole-vector temporaries were 48 MiB of
    # fresh pages at 16 MiB, 60-90 ms of CPU inside the timed call). The same sums, in the
    # same order, per element: ulp / 2 + quantization · (1 + slack).
    size = values.size
    out = np.empty(size, np.float64)
    step = max(per, ERROR_BLOCK - ERROR_BLOCK % per)
    scratch = np.empty(min(step, size), np.float32)
    margin = n * 0.5 / scales * (1.0 + FLOAT64_SLACK) if scales.ndim == 0 else None
    for start in range(0, size, step):
        stop = min(start + step, size)
        part = scratch[:stop - start]
        np.abs(values[start:stop], out=part)
        np.spacing(part, out=part)
        dest = out[start:stop]
        np.multiply(part, 0.5, out=dest, dtype=np.float64)
        if margin is not None:
            dest += margin
        elif per == 1:
            dest += n * 0.5 / scales[start:stop] * (1.0 + FLOAT64_SLACK)
        else:
            group = n * 0.5 / scales[start // per:-(-stop // per)] * (1.0 + FLOAT64_SLACK)
            dest += np.repeat(group, per)[:stop - start]
    return out


def error_bound_verdict(n: int, scale: float, result: np.ndarray,
                        error: np.ndarray) -> tuple[float, bool]:
    """(max of `error_bound_scaled(n, scale, result)`, whether every `error` is within its
    element's bound), for one scale, the same numbers without the per-element bound where
    they follow from the largest |y| and the quantization term alone. Why: the bound's
    float32 spacing is ~2.5 ns an element, a streamed check's largest step after drawing.
    Each element's bound is margin + spacing(|y|) / 2, rounded once; spacing grows with |y|,
    so the largest bound is the largest |y|'s, and an error within the margin is within every
    element's bound."""
    values = np.asarray(result, dtype=np.float32)
    if not values.size:
        return 0.0, True
    top = np.float32(max(abs(float(values.max())), abs(float(values.min()))))
    if not np.isfinite(top):                         # (inf or NaN: the bound per element)
        bounds = error_bound_scaled(n, scale, values)
        return float(np.max(bounds)), bool(np.all(error <= bounds))
    margin = n * 0.5 / np.float64(scale) * (1.0 + FLOAT64_SLACK)
    largest = float(np.float64(np.spacing(top)) * 0.5 + margin)
    if float(np.max(error)) <= margin:
        return largest, True
    return largest, bool(np.all(error <= error_bound_scaled(n, scale, values)))
