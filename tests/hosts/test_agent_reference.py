"""The agent's check against the exact float64 sum, a block at a time: the blocks must be the
whole-vector reference exactly (a Generator's normals drawn in pieces are the stream drawn at
once), and a wrong element must be caught in whichever block it falls."""

from __future__ import annotations

import numpy as np
import pytest

from hosts.agent import VERIFY_BLOCK, check_result, gradient, reference, reference_blocks


@pytest.mark.parametrize("length", [1, 7, VERIFY_BLOCK, VERIFY_BLOCK * 2 + 13])
@pytest.mark.parametrize("job", [None, 3])
def test_blocks_are_the_whole_vector_sum(length: int, job) -> None:
    n, seed, magnitude = 3, 11, 0.5
    whole = sum(gradient(seed, r, length, magnitude, job).astype(np.float64) for r in range(n))
    whole_abs = sum(np.abs(gradient(seed, r, length, magnitude, job).astype(np.float64))
                    for r in range(n))
    own = (1, gradient(seed, 1, length, magnitude, job))
    for given in (None, own):
        firsts = []
        for first, exact, abs_sum in reference_blocks(seed, n, length, magnitude, job, own=given):
            firsts.append(first)
            assert np.array_equal(exact, whole[first:first + exact.size])
            assert np.array_equal(abs_sum, whole_abs[first:first + exact.size])
        assert firsts == list(range(0, length, VERIFY_BLOCK))
    total, abs_total, global_max = reference(seed, n, length, magnitude, job)
    assert np.array_equal(total, whole) and np.array_equal(abs_total, whole_abs)
    assert global_max == max(float(np.max(np.abs(gradient(seed, r, length, magnitude, job))))
                             for r in range(n))


def test_a_wrong_element_in_a_later_block_is_not_correct() -> None:
    n, seed, length = 2, 5, VERIFY_BLOCK + 100
    exact, _, _ = reference(seed, n, length, 1.0)
    result = exact.astype(np.float32)
    bound = lambda first, end, _: np.full(end - first, 1e-6)  # noqa: E731
    good = check_result(result, reference_blocks(seed, n, length, 1.0), bound)
    assert good["correct"] and good["max_abs_error"] <= 1e-6
    result[VERIFY_BLOCK + 42] += 1.0
    bad = check_result(result, reference_blocks(seed, n, length, 1.0), bound)
    assert not bad["correct"] and bad["max_abs_error"] >= 0.99
    # the mean is over the whole vector: the one wrong element plus float32 rounding elsewhere
    assert bad["max_abs_error"] / length <= bad["mean_abs_error"] \
        <= (bad["max_abs_error"] + length * 1e-6) / length
