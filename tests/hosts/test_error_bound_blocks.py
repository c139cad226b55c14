"""quantize.error_bound_scaled a block at a time (docs/hosts.md, session 22): the same float64
bound per element as the whole-vector formula, without whole-vector temporaries."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from hosts import quantize as qz
from hosts.ina_codec import FloatCodec


def whole_vector_bound(n: int, scales, result: np.ndarray) -> np.ndarray:
    """The definition (protocol §5.2): n·0.5/scale·(1 + slack) + ulp32(y)/2, per element."""
    quantization = n * 0.5 / np.asarray(scales, dtype=np.float64)
    return np.spacing(np.abs(result)).astype(np.float64) / 2 \
        + quantization * (1.0 + qz.FLOAT64_SLACK)


def awkward_vector(size: int) -> np.ndarray:
    rng = np.random.default_rng(size)
    x = (rng.standard_normal(size) * 4).astype(np.float32)
    x[::7] = 0.0
    x[1::11] = np.float32(1e-42)          # subnormal
    x[2::13] = -np.float32(3e38)
    if size > 9:
        x[5], x[6], x[8] = np.inf, -np.inf, np.nan
    return x


SIZES = [0, 1, 5, qz.ERROR_BLOCK - 1, qz.ERROR_BLOCK, qz.ERROR_BLOCK + 1,
         3 * qz.ERROR_BLOCK + 17]


@pytest.mark.parametrize("size", SIZES)
def test_one_scale_gives_the_definition_bit_for_bit(size: int) -> None:
    x = awkward_vector(size)
    for scale in (1e6, np.float64(3.5e5), 1.0):
        got = qz.error_bound_scaled(4, scale, x)
        assert got.dtype == np.float64 and got.shape == x.shape
        assert np.array_equal(got, whole_vector_bound(4, scale, x), equal_nan=True)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("per", [1, 3, 256, 1000, 2 * qz.ERROR_BLOCK + 5])
def test_scales_per_group_give_the_definition_bit_for_bit(size: int, per: int) -> None:
    x = awkward_vector(size)
    groups = np.random.default_rng(per).uniform(1e3, 1e7, -(-size // per))
    per_element = np.repeat(groups, per)[:size]
    expected = whole_vector_bound(8, per_element, x)
    assert np.array_equal(qz.error_bound_scaled(8, per_element, x), expected, equal_nan=True)
    assert np.array_equal(qz.error_bound_scaled(8, groups, x, per=per), expected,
                          equal_nan=True)


def test_a_scalar_result_still_works() -> None:
    got = qz.error_bound_scaled(4, 1e6, np.float32(2.5))
    assert got == whole_vector_bound(4, 1e6, np.float32(2.5))


def test_no_whole_vector_temporaries() -> None:
    """Peak memory while bounding a 4 Mi-element result: the float64 output and a few blocks
    (the whole-vector formula also held two float32 vectors and a float64 one besides)."""
    x = awkward_vector(1 << 22)
    tracemalloc.start()
    try:
        bound = qz.error_bound_scaled(4, 1e6, x)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= bound.nbytes + 8 * 8 * qz.ERROR_BLOCK


def test_the_codec_bound_with_block_scaling_matches_the_definition() -> None:
    """Block scaling: one scale per chunk, the last chunk short (the codec's own call)."""
    rng = np.random.default_rng(3)
    values = rng.standard_normal(5 * 32 + 7).astype(np.float32)
    codec = FloatCodec(values, job=1, worker=0, n=4, k=8, pool_size=4, fmt="int8",
                       scaling="block", divisor=4)
    codec.on_max(codec.max_offer().astype(np.int64) & 0xFFFFFFFF)
    codec._agreed[:] = rng.integers(0x3E00, 0x4100, codec.chunks)   # varied scales per chunk
    result = values * 4
    per_element = np.repeat(codec.scales(), codec.per_chunk)[:values.size]
    assert np.unique(per_element).size > 1
    assert np.array_equal(codec.error_bound(result), whole_vector_bound(4, per_element, result))
