"""`inaemu/sim/native/exact_sums.py` (fastnormals.c): seeded draws summed in C without the GIL
must be the sums NumPy makes (`hosts.gradient_stream.draw` then `hosts.agent.add_exact`, rank
by rank), leave each generator where NumPy would, and refuse bad arguments; one rank's values
added in C (`add_values`) must be add_exact's sums."""

import threading

import numpy as np
import pytest

from hosts.agent import add_exact
from hosts.gradient_stream import draw, generator_of
from inaemu.sim.native.exact_sums import add_drawn, add_values
from inaemu.sim.seekable_gradient import SeekableGradient

pytestmark = pytest.mark.skipif(add_drawn() is None,
                                reason="no C compiler or no libnpyrandom.a in NumPy here")


@pytest.mark.parametrize("count", [0, 1, 7, 70_001])
@pytest.mark.parametrize("magnitude", [1.0, 0.37])
@pytest.mark.parametrize("magnitudes", [True, False])
def test_the_sums_and_the_generators_are_numpy_s(count, magnitude, magnitudes):
    n = 5
    generators = [generator_of(3, rank) for rank in range(n)]
    total = np.zeros(count)
    abs_total = np.zeros(count) if magnitudes else None
    add_drawn()(tuple(g.bit_generator.capsule for g in generators), count, magnitude, total,
                abs_total)
    want, want_abs = np.zeros(count), np.zeros(count) if magnitudes else None
    references = [generator_of(3, rank) for rank in range(n)]
    for reference in references:
        add_exact(want, draw(reference, count, magnitude), want_abs)
    assert np.array_equal(total, want)
    if magnitudes:
        assert np.array_equal(abs_total, want_abs)
    for generator, reference in zip(generators, references):      # where NumPy left them
        assert np.array_equal(generator.standard_normal(3), reference.standard_normal(3))


def test_sums_are_added_to_what_the_arrays_hold_in_rank_order():
    """Added to, not overwritten: the caller's running sums go on in rank order."""
    generators = [generator_of(9, rank) for rank in range(3)]
    total = np.full(100, 0.1)
    add_drawn()(tuple(g.bit_generator.capsule for g in generators), 100, 1.0, total, None)
    want = np.full(100, 0.1)
    for rank in range(3):
        add_exact(want, draw(generator_of(9, rank), 100))
    assert np.array_equal(total, want)


def test_bad_arguments_are_refused():
    capsule = generator_of(1, 0).bit_generator.capsule
    with pytest.raises(TypeError):
        add_drawn()([capsule], 4, 1.0, np.zeros(4), None)           # not a tuple
    with pytest.raises(ValueError):
        add_drawn()((capsule,), 5, 1.0, np.zeros(4), None)          # sums too short
    with pytest.raises(ValueError):
        add_drawn()((capsule,), 4, 1.0, np.zeros(4, np.float32), None)   # not float64
    with pytest.raises(ValueError):
        add_drawn()((capsule,), -1, 1.0, np.zeros(4), None)
    with pytest.raises(ValueError):
        add_drawn()((object(),), 4, 1.0, np.zeros(4), None)         # not a generator's


def test_a_seekable_generator_at_a_value_draws_the_gradient_there_on_any_thread():
    length, cuts = 50_000, [0, 10_000, 20_000, 30_000]
    reader = SeekableGradient(4, 1, length, cuts)
    reader.read(0, length)                          # every cut marked
    whole = draw(generator_of(4, 1), length)
    got = {}

    def on_a_thread():
        got["values"] = draw(reader.generator_at(25_000), 100)
    thread = threading.Thread(target=on_a_thread)
    thread.start()
    thread.join()
    assert np.array_equal(got["values"], whole[25_000:25_100])
    assert np.array_equal(draw(reader.generator_at(20_000), 5), whole[20_000:20_005])


def _awkward_values(rng: np.random.Generator, count: int) -> np.ndarray:
    """float32 values whose float64 sums round: wide exponents, subnormals, signed zeros."""
    values = (rng.standard_normal(count) * np.exp2(rng.integers(-140, 120, count))) \
        .astype(np.float32)
    values[::7] = np.float32(-0.0)
    values[1::11] = np.float32(1e-45)                      # the smallest subnormal
    values[2::13] = np.float32(3.4e38)
    return values


@pytest.mark.parametrize("count", [0, 1, 7, 31, 70_001])
@pytest.mark.parametrize("magnitudes", [True, False])
def test_values_added_in_c_are_add_exacts_sums(count, magnitudes):
    rng = np.random.default_rng(count)
    start = rng.standard_normal(count) * np.exp2(rng.integers(-60, 60, count))
    total, want = start.copy(), start.copy()
    abs_total = np.abs(start) if magnitudes else None
    want_abs = np.abs(start) if magnitudes else None
    for _ in range(3):                           # ranks in turn, onto running sums
        values = _awkward_values(rng, count)
        add_values()(values, total, abs_total)
        add_exact(want, values, want_abs)
    assert total.tobytes() == want.tobytes()
    if magnitudes:
        assert abs_total.tobytes() == want_abs.tobytes()


def test_values_to_add_are_checked():
    with pytest.raises(ValueError):
        add_values()(np.zeros(4), np.zeros(4), None)                        # not float32
    with pytest.raises(ValueError):
        add_values()(np.zeros(5, np.float32), np.zeros(4), None)            # sums too short
    with pytest.raises(ValueError):
        add_values()(np.zeros(4, np.float32), np.zeros(4, np.float32), None)   # not float64
    with pytest.raises(ValueError):
        add_values()(np.zeros(4, np.float32), np.zeros(4), np.zeros(3))     # |x| sums short
    with pytest.raises(TypeError):
        add_values()(np.zeros(4, np.float32), np.zeros(4))
