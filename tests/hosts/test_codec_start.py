"""What a float call computes before its MAX round (hosts/ina_codec.py, docs/hosts.md session
23): each chunk's max |x| from the float32 bits with the sign cleared, in the same pass as the
check for inf and NaN, with the last, partial chunk padded apart (no padded copy of the vector).
The same maxima, quantized lanes and errors as abs-then-max on a zero-padded copy."""

from __future__ import annotations

import numpy as np
import pytest

from hosts import quantize as qz
from hosts.errors import UsageError
from hosts.ina_codec import BLOCK_VALUES, FloatCodec
from hosts.ina_session import InaSession, State


def codec(values: np.ndarray, *, k: int = 8, fmt: str = "int32",
          scaling: str = "job") -> FloatCodec:
    return FloatCodec(values, job=1, worker=0, n=3, k=k, pool_size=4, fmt=fmt, scaling=scaling,
                      divisor=3, first_position=0)


def padded_rows(values: np.ndarray, per_chunk: int) -> np.ndarray:
    chunks = -(-values.size // per_chunk)
    padded = np.zeros(chunks * per_chunk, np.float32)
    padded[:values.size] = values
    return padded.reshape(chunks, per_chunk)


def awkward(size: int, seed: int) -> np.ndarray:
    """Normal values with signed zeros, subnormals, ±1e38 and their like."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(size).astype(np.float32) * np.float32(rng.choice([1e-3, 1, 1e30]))
    picks = rng.choice(size, size=min(size, 12), replace=False)
    specials = np.array([-0.0, 0.0, 1e-45, -1e-45, 1e-40, -1e38, 1e38, -1.0,
                         -0.0, 5e-39, -5e-39, 2.0], np.float32)
    x[picks] = specials[:picks.size]
    return x


@pytest.mark.parametrize("fmt", ["int32", "int16", "int8"])
@pytest.mark.parametrize("size", [1, 7, 8, 9, 31, 32, 33, 1000, BLOCK_VALUES + 5,
                                  2 * BLOCK_VALUES, 3 * BLOCK_VALUES - 1])
def test_block_maxima_are_those_of_abs_then_max_on_a_padded_copy(size: int, fmt: str) -> None:
    x = awkward(size, size)
    c = codec(x, fmt=fmt)
    rows = padded_rows(x, c.per_chunk)
    expected = np.max(np.abs(rows), axis=1).astype(np.float64)
    assert np.array_equal(c.block_max, expected)
    assert c.local_max == float(expected.max())


@pytest.mark.parametrize("size", [33, BLOCK_VALUES + 5])
def test_the_quantized_lanes_of_the_last_chunk_are_zero_padded(size: int) -> None:
    x = np.random.default_rng(2).standard_normal(size).astype(np.float32)
    c = codec(x)
    c.on_max(np.full(8, qz.float32_bits(c.local_max), np.int64))
    table, row, _first, _ready = c.table_rows()
    last = c.chunks - 1
    payload = c.contribution(last, last % 4, (last // 4) % 2)   # quantizes up to the last
    assert payload == bytes(table[last * row:(last + 1) * row])
    lanes = np.frombuffer(payload, ">i4", offset=16)
    tail = size - last * 8
    expected = qz.quantize_scaled(padded_rows(x, 8)[last], c.scale, c.limit, "int32")
    assert np.array_equal(lanes, expected) and not lanes[tail:].any()


@pytest.mark.parametrize("where", [0, 5, 8, BLOCK_VALUES - 1, BLOCK_VALUES, -1])
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_inf_and_nan_anywhere_are_refused_before_the_call_starts(where: int, bad) -> None:
    x = np.ones(BLOCK_VALUES + 13, np.float32)
    x[where] = bad
    s = InaSession(job=1, worker=0, n=2, k=8, pool_size=4, window=4, rto=0.1, rto_max=0.4,
                   max_retx=3)
    index = where % x.size
    with pytest.raises(UsageError, match=f"non-finite value: element {index} is"):
        s.start(x, 0.0)
    assert s.state is State.IDLE and s.in_flight == 0 and s.counters.packets_sent == 0
    x[where] = 1.0
    assert len(s.start(x, 0.0).send) == 1                  # nothing left behind
    with pytest.raises(ValueError, match=f"element {index} is"):
        x[where] = bad
        codec(x)
