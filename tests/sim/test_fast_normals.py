"""The seeded gradients drawn in C (inaemu/sim/native/fast_normals.py): NumPy's very values and
the generator left where NumPy leaves it, over seeds, counts, magnitudes and every layer's
edges, and a drawer that differs is refused."""

from pathlib import Path

import numpy as np
import pytest

from hosts import gradient_stream
from hosts.agent import gradient
from inaemu.sim.native import fast_normals, native_loop_class
from inaemu.sim.native import why_not as native_why_not
from inaemu.sim.native.fast_normals import libraries

fast = fast_normals.drawer()
# where the simulator's native core builds, this must too (the same compiler and NumPy): a
# broken build or a failed check fails the first test below instead of skipping them all
needs_c = pytest.mark.skipif(native_loop_class() is None,
                             reason=f"no native core here: {native_why_not()}")
TAIL = 3.6541528853610088          # the ziggurat's last layer: beyond it NumPy decides alone


def _numpy(seed: int, count: int, magnitude: float) -> tuple[np.ndarray, dict]:
    generator = np.random.default_rng(seed)
    values = generator.standard_normal(count)
    if magnitude != 1.0:
        values *= magnitude
    return values.astype(np.float32), generator.bit_generator.state


@needs_c
def test_the_c_draw_builds_and_passes_its_checks_where_the_native_core_does():
    assert fast is not None, fast_normals.why_not()


@needs_c
@pytest.mark.parametrize("magnitude", [1.0, 1e-3, 7.25])
@pytest.mark.parametrize("count", [0, 1, 7, 65536, 1_000_003])
@pytest.mark.parametrize("seed", [0, 5, 2**63 + 17])
def test_the_c_draw_is_numpys_values_and_state(seed, count, magnitude):
    generator = np.random.default_rng(seed)
    values = fast(generator, count, magnitude)
    expected, state = _numpy(seed, count, magnitude)
    assert values.dtype == np.float32 and values.tobytes() == expected.tobytes()
    assert generator.bit_generator.state == state


@needs_c
def test_a_numpy_integer_count_is_taken_and_a_bad_one_refused():
    expected, _state = _numpy(4, 1000, 1.0)
    assert fast(np.random.default_rng(4), np.int64(1000), 1.0).tobytes() == expected.tobytes()
    with pytest.raises(TypeError):
        fast(np.random.default_rng(4), 10.5, 1.0)
    with pytest.raises(ValueError):
        fast(np.random.default_rng(4), -1, 1.0)


@needs_c
def test_draws_in_turn_with_numpy_continue_one_stream():
    """C and NumPy draws on one generator, in turn, are one stream: the tail values (which
    NumPy's own routine decides, with the words it draws after them) included."""
    ours, theirs = np.random.default_rng(42), np.random.default_rng(42)
    for count in (3_000_000, 11, 250_000, 1):
        values = fast(ours, count, 1.0)
        assert values.tobytes() == theirs.standard_normal(count).astype(np.float32).tobytes()
        assert ours.standard_normal(5).tobytes() == theirs.standard_normal(5).tobytes()
    assert ours.bit_generator.state == theirs.bit_generator.state
    assert np.count_nonzero(np.abs(fast(np.random.default_rng(1), 4_000_000, 1.0)) > TAIL) > 100


@needs_c
def test_every_layers_edges_are_decided_as_numpy_does():
    """The words at each layer's bound, one below it and one above it, both signs, through the
    C draw and through NumPy's routine: the same values."""
    from p4switch.runtime.cgen import nativebuild
    source = (Path(fast_normals.__file__).parent / "fastnormals.c").read_text()
    module = nativebuild.load_source(fast_normals.PREFIX, source, libraries())
    module.learn()
    assert module.check_bounds() == []


def test_a_drawer_that_differs_from_numpy_is_refused():
    """The check before a drawer is used: other values, or the generator left elsewhere."""
    def numpy_draw(generator, count, magnitude):
        values = generator.standard_normal(count)
        return (values * magnitude if magnitude != 1.0 else values).astype(np.float32)

    def sign_lost(generator, count, magnitude):
        return np.abs(numpy_draw(generator, count, magnitude))

    def one_more(generator, count, magnitude):
        values = numpy_draw(generator, count, magnitude)
        generator.standard_normal(1)
        return values

    def rounded_late(generator, count, magnitude):      # magnitude after the float32 rounding
        return generator.standard_normal(count).astype(np.float32) * np.float32(magnitude)

    assert fast_normals._differs_from_numpy(numpy_draw) is None
    for wrong in (sign_lost, one_more, rounded_late):
        assert fast_normals._differs_from_numpy(wrong) is not None, wrong.__name__


def test_gradients_are_the_definitions_whoever_draws():
    """`gradient` and the streams through `draw`: NumPy's values with the simulator's drawer
    installed (or NumPy alone where it is not), and a non-finite magnitude is NumPy's."""
    assert gradient_stream._fast_draw is fast_normals.draw_checked
    for seed, rank, length in ((3, 0, 100_001), (9, 7, 65536)):
        expected = np.random.default_rng([seed, rank]).standard_normal(length).astype(np.float32)
        assert gradient(seed, rank, length).tobytes() == expected.tobytes()
    with np.errstate(invalid="ignore"):
        values = gradient_stream.draw(np.random.default_rng(1), 10, float("inf"))
        expected = (np.random.default_rng(1).standard_normal(10) * np.inf).astype(np.float32)
    assert values.tobytes() == expected.tobytes()


@needs_c
@pytest.mark.parametrize("magnitude", [1.0, 2.5e-3])
@pytest.mark.parametrize("count", [0, 1, 65536, 1_000_003])
def test_the_c_max_pass_is_numpys_maximum_and_state(count, magnitude):
    ours, theirs = np.random.default_rng(count), np.random.default_rng(count)
    top = fast_normals.max_bits_checked(ours, count, magnitude)
    values, state = gradient_stream.numpy_draw(theirs, count, magnitude), theirs.bit_generator.state
    assert top == (int(np.max(values.view(np.uint32) & 0x7FFFFFFF)) if count else 0)
    assert ours.bit_generator.state == state
    assert fast_normals.max_bits_checked(np.random.default_rng(1), 5, float("nan")) is None


def test_a_streams_max_pass_is_the_same_with_or_without_the_c_pass():
    """`GradientStream.max_bits` (the codec's max pass, its first block kept) and the reads
    after it, with the simulator's drawers and with NumPy alone."""
    from hosts.gradient_stream import GradientStream
    length = 3 * 65536 + 17
    whole = gradient(8, 2, length)
    installed = gradient_stream._fast_draw, gradient_stream._fast_max
    try:
        for drawers in ((None, None), installed):
            gradient_stream.use_fast_draw(*drawers)
            stream = GradientStream(8, 2, length)
            assert stream.max_bits() == int(np.max(whole.view(np.uint32) & 0x7FFFFFFF))
            assert stream.drawn == length
            assert stream.read(0, 65536).tobytes() == whole[:65536].tobytes()
            assert stream.read(65536, length).tobytes() == whole[65536:].tobytes()
    finally:
        gradient_stream.use_fast_draw(*installed)
    assert installed[1] is fast_normals.max_bits_checked


def test_a_max_pass_that_differs_from_numpy_is_refused():
    """The check before the C max pass is used: the sign bit kept, a value left out."""
    def built(rule):
        def max_bits(generator, count, magnitude):
            values = gradient_stream.numpy_draw(generator, count, magnitude)
            return rule(values) if count else 0
        return max_bits

    right = built(lambda values: int(np.max(values.view(np.uint32) & 0x7FFFFFFF)))
    signed = built(lambda values: int(np.max(values.view(np.uint32))))
    one_short = built(lambda values: int(np.max(values[:-1].view(np.uint32) & 0x7FFFFFFF,
                                                initial=0)))
    assert fast_normals._max_differs_from_numpy(right) is None
    for wrong in (signed, one_short):
        assert fast_normals._max_differs_from_numpy(wrong) is not None
