"""Quantization properties: the §5 bound holds against the float64 sum, sums never overflow."""

from __future__ import annotations

import numpy as np
import pytest

from hosts import quantize as qz

INT32_MAX = 2**31 - 1


def random_vectors(rng: np.random.Generator, n: int, length: int) -> list[np.ndarray]:
    """Vectors mixing zeros, denormals, tiny and huge magnitudes (sums stay finite in float32)."""
    style = rng.integers(0, 5)
    vectors = []
    for _ in range(n):
        x = rng.standard_normal(length)
        if style == 0:       # exponents over a huge range
            x *= 10.0 ** rng.uniform(-38, 36, size=length)
        elif style == 1:     # denormals only
            x = x * 1e-40
        elif style == 2:     # mostly zeros with a few large values
            x[rng.random(length) < 0.8] = 0.0
            x *= 1e30
        elif style == 3:     # one common tiny scale
            x *= 10.0 ** rng.uniform(-30, -20)
        x = np.clip(x, -3e37, 3e37)     # n <= 32 of them stay below float32's max
        vectors.append(x.astype(np.float32))
    return vectors


def simulated_allreduce(vectors: list[np.ndarray]) -> tuple[np.ndarray, float, float]:
    """What the switch and hosts compute: quantize, wrapping int32 sum, dequantize."""
    n = len(vectors)
    global_max = max(qz.local_max(x) for x in vectors)
    scale = qz.scale_for(global_max, n)
    quantized = [qz.quantize(x, scale, n) for x in vectors]
    partial = np.zeros_like(quantized[0], dtype=np.int64)
    for q in quantized:
        assert np.max(np.abs(q.astype(np.int64))) <= INT32_MAX // n
        partial += q
        assert np.all(np.abs(partial) <= INT32_MAX)      # no partial sum overflows
    return qz.dequantize(partial, scale), global_max, scale


@pytest.mark.parametrize("seed", range(12))
def test_error_bound_holds_against_the_float64_sum(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for n in range(1, 33):
        vectors = random_vectors(rng, n, int(rng.integers(1, 200)))
        result, global_max, _ = simulated_allreduce(vectors)
        exact = np.sum(np.array(vectors, dtype=np.float64), axis=0)
        bound = qz.error_bound(global_max, n, result)
        assert result.dtype == np.float32
        assert np.all(np.abs(result.astype(np.float64) - exact) <= bound), (seed, n)


def test_values_at_the_edge_of_the_range_stay_within_the_bound() -> None:
    # all workers offer ±M and a value near a half step below the limit: the largest sums
    for n in (1, 2, 7, 32):
        limit = INT32_MAX // n
        global_max = np.float32(1.0)
        scale = qz.scale_for(float(global_max), n)
        x = np.float32((limit - 2.5) / scale)
        vectors = [np.array([global_max, x, -x], np.float32)] * n
        result, _, _ = simulated_allreduce(vectors)
        exact = np.sum(np.array(vectors, dtype=np.float64), axis=0)
        assert np.all(np.abs(result - exact) <= qz.error_bound(1.0, n, result))


def test_scale_uses_the_whole_safe_range() -> None:
    assert qz.scale_for(2.0, 4) == (INT32_MAX // 4) / 2.0
    q = qz.quantize(np.array([2.0, -2.0, 1.0, 0.0], np.float32), qz.scale_for(2.0, 4), 4)
    assert q.tolist() == [INT32_MAX // 4, -(INT32_MAX // 4), round((INT32_MAX // 4) / 2), 0]


def test_all_zero_and_empty_vectors() -> None:
    zeros = np.zeros(5, np.float32)
    assert qz.local_max(zeros) == 0.0 and qz.local_max(np.zeros(0, np.float32)) == 0.0
    assert qz.scale_for(0.0, 3) == 1.0
    assert qz.quantize(zeros, 1.0, 3).tolist() == [0] * 5
    assert np.all(qz.error_bound(0.0, 3, zeros) == float(np.spacing(np.float32(0))) / 2)


def test_dequantize_is_one_float64_division_then_float32() -> None:
    sums = np.array([3, -7, 2**31 - 1], np.int64)
    scale = 3.0
    expected = (sums.astype(np.float64) / scale).astype(np.float32)
    assert np.array_equal(qz.dequantize(sums, scale), expected)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_non_finite_input_is_refused(bad: float) -> None:
    x = np.array([1.0, bad, 2.0], np.float32)
    with pytest.raises(ValueError, match="element 1"):
        qz.local_max(x)
    with pytest.raises(ValueError, match="non-finite"):
        qz.quantize(x, 1.0, 2)


def test_bad_shapes_dtypes_and_worker_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="float32"):
        qz.local_max(np.zeros(3, np.float64))
    with pytest.raises(ValueError, match="1-D"):
        qz.local_max(np.zeros((2, 2), np.float32))
    for n in (0, 65536, 2.0, True):
        with pytest.raises(ValueError, match="worker count"):
            qz.scale_for(1.0, n)
    with pytest.raises(ValueError, match="agreed maximum"):
        qz.quantize(np.array([4.0], np.float32), qz.scale_for(1.0, 2), 2)


def test_float32_bit_patterns_order_like_the_numbers() -> None:
    values = [0.0, 1e-45, 1e-38, 0.5, 1.0, 3.4e38]
    patterns = [qz.float32_bits(v) for v in values]
    assert patterns == sorted(patterns)
    assert qz.float32_bits(1.0) == 0x3F800000
    assert qz.float32_from_bits(0x3F800000) == 1.0
    for bits in (0x7F800000, 0x7FC00000, 0x80000000):
        with pytest.raises(ValueError):
            qz.float32_from_bits(bits)
    with pytest.raises(ValueError):
        qz.float32_bits(-1.0)


@pytest.mark.parametrize("fmt", ["int32", "int16", "int8"])
@pytest.mark.parametrize("per_element", [False, True])
def test_scaled_paths_equal_the_plain_float64_formulas(fmt: str, per_element: bool) -> None:
    """quantize_scaled/dequantize_scaled work in place (fewer passes over a 4M vector); they must
    give bit for bit what casting to float64 first gives, for one scale and a scale per value."""
    rng = np.random.default_rng(11)
    values = (rng.standard_normal(5000) * rng.choice([1e-3, 1.0, 50.0], 5000)).astype(np.float32)
    limit = qz.format_limit(fmt, 3)
    top = float(np.max(np.abs(values)))
    scales = (limit / top * rng.uniform(0.5, 1.0, values.size)) if per_element else limit / top
    got = qz.quantize_scaled(values, scales, limit, fmt)
    plain = np.clip(np.rint(values.astype(np.float64) * scales), -limit, limit)
    assert got.dtype == qz.wire_dtype(fmt).newbyteorder("=")
    assert np.array_equal(got, plain.astype(got.dtype))
    sums = (got.astype(np.int64) * 3).astype(np.int32)
    back = qz.dequantize_scaled(sums, scales)
    expected = (sums.astype(np.int64).astype(np.float64) / scales).astype(np.float32)
    assert back.dtype == np.float32 and np.array_equal(back.view(np.uint32),
                                                        expected.view(np.uint32))
    with pytest.raises(ValueError, match="agreed maximum"):
        qz.quantize_scaled(values * np.float32(2.5), scales, limit, fmt)


@pytest.mark.parametrize("fmt", ["int32", "int16", "int8"])
def test_a_rounding_just_past_the_limit_is_clipped_and_a_block_in_range_is_left(fmt) -> None:
    """quantize_scaled clips only a block whose largest magnitude passes the limit (by at
    most 1, float64 rounding); a block within it comes out as rint(x · scale) unclipped."""
    limit = qz.format_limit(fmt, 3)
    block = np.array([1.0, -1.0, 0.5, -0.375, 2.0 ** -20, 0.0], np.float32)
    for scale in (limit / 2.0, float(limit), limit + 0.5, limit + 1.0):
        got = qz.quantize_scaled(block, scale, limit, fmt)
        assert np.array_equal(got, np.clip(np.rint(block.astype(np.float64) * scale),
                                           -limit, limit))
        assert np.abs(got.astype(np.int64)).max() == min(np.rint(scale), limit)


def test_the_bound_verdict_is_the_per_element_bound_folded():
    """error_bound_verdict: max(error_bound_scaled) and all(error <= it), the same numbers,
    whether or not an error is beyond the quantization term."""
    rng = np.random.default_rng(4)
    for n, scale in ((64, qz.quantization_limit(64) / 5.3), (3, 1e3), (1000, 17.0)):
        values = (rng.standard_normal(70_000) * 20).astype(np.float32)
        values[:3] = (0.0, -0.0, np.float32(1e-40))
        bounds = qz.error_bound_scaled(n, scale, values)
        margin = n * 0.5 / scale * (1.0 + qz.FLOAT64_SLACK)
        for error in (np.full(values.size, margin),                 # within the term alone
                      bounds, bounds * (1 + 1e-9),                   # at and past the bound
                      rng.random(values.size) * bounds.max()):       # some past, some not
            assert qz.error_bound_verdict(n, scale, values, error) == \
                (float(np.max(bounds)), bool(np.all(error <= bounds)))
    top = np.float32(-3.5)                       # the largest |y| is a negative one
    assert qz.error_bound_verdict(8, 2.0, np.array([top, 1.0], np.float32), np.zeros(2))[0] \
        == float(np.max(qz.error_bound_scaled(8, 2.0, np.array([top, 1.0], np.float32))))
