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


@pytest.fixture(params=["capsule", "pcg"])
def max_pass_path(request, monkeypatch):
    """Each max-pass test through both C passes: NumPy's generator through its capsule, and
    PCG64 stepped in C from its public state (`max_bits_pcg`, by default only for long passes:
    every count takes it here)."""
    if request.param == "pcg":
        monkeypatch.setattr(fast_normals, "PCG_MIN_COUNT", 0)
    else:
        monkeypatch.setattr(fast_normals, "PCG_MIN_COUNT", 1 << 62)
    return request.param


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
def test_the_c_max_pass_is_numpys_maximum_and_state(count, magnitude, max_pass_path):
    ours, theirs = np.random.default_rng(count), np.random.default_rng(count)
    top = fast_normals.max_bits_checked(ours, count, magnitude)
    values, state = gradient_stream.numpy_draw(theirs, count, magnitude), theirs.bit_generator.state
    assert top == (int(np.max(values.view(np.uint32) & 0x7FFFFFFF)) if count else 0)
    assert ours.bit_generator.state == state
    assert fast_normals.max_bits_checked(np.random.default_rng(1), 5, float("nan")) is None


PCG64_MULTIPLIER = (2549297995355413924 << 64) | 4865540595714422341
LOW_64 = (1 << 64) - 1


def _output_state(word: int, high: int) -> int:
    """A PCG64 state (its high half given) whose output is `word`: NumPy's PCG64 outputs a
    state's halves XORed and rotated right by its top 6 bits."""
    rotation = high >> 58
    return (high << 64) | (high ^ (((word << rotation) | (word >> (64 - rotation))) & LOW_64))


def _generator_giving(*words: int) -> np.random.Generator:
    """A PCG64 generator whose next 64-bit words are `words` (one or two), then its own:
    NumPy's PCG64 steps its 128-bit state (state x multiplier + inc) and outputs the new one,
    so the states with those outputs are chosen and the state before them (the multiplier is
    odd: invertible mod 2^128) and, for two, the increment between them (odd) solved for."""
    generator = np.random.default_rng(0)
    state = generator.bit_generator.state
    first = _output_state(words[0], 0x0123456789ABCDEF)
    inc = state["state"]["inc"]
    if len(words) == 2:
        for high in range(1, 64):
            inc = (_output_state(words[1], high) - first * PCG64_MULTIPLIER) % (1 << 128)
            if inc % 2:
                break
    state["state"]["inc"] = inc
    state["state"]["state"] = (first - inc) * pow(PCG64_MULTIPLIER, -1, 1 << 128) % (1 << 128)
    generator.bit_generator.state = state
    return generator


def _numpy_bits(word: int, magnitude: float) -> int:
    """|x| of NumPy's value for a generator whose next word is `word`, as float32 bits."""
    value = gradient_stream.numpy_draw(_generator_giving(word), 1, magnitude)
    return int(value.view(np.uint32)[0] & 0x7FFFFFFF)


def test_a_scripted_generator_gives_its_words_first():
    words = (0, 1, 0xFFFF_FFFF_FFFF_FFFF, 0x8000_0000_0000_0001, 0x1234_5678_9ABC_DEF0)
    for word in words:
        assert _generator_giving(word).bit_generator.random_raw() == word
    for pair in zip(words, words[1:]):
        assert tuple(_generator_giving(*pair).bit_generator.random_raw(2)) == pair


def _takes_at_once(layer: int, at: int) -> bool:
    """Does NumPy's routine decide word (layer, +, magnitude `at`) from that word alone?"""
    theirs = _generator_giving((at << 9) | layer)
    one_word = _generator_giving((at << 9) | layer)
    theirs.standard_normal()
    one_word.bit_generator.random_raw()
    return theirs.bit_generator.state == one_word.bit_generator.state


@needs_c
@pytest.mark.parametrize("magnitude", [1.0, 2.5e-3])
@pytest.mark.parametrize("layer", [1, 2, 77, 128, 200, 254, 255])
def test_the_c_max_pass_keeps_each_layers_largest_magnitude_exactly(layer, magnitude,
                                                                   max_pass_path):
    """The C max pass keeps a layer's largest magnitude and makes it a value at the end: a
    magnitude that is the last one before its value's float32 rounding changes, and the first
    one after, give NumPy's own value (one more or less would round to the other float32)."""
    def word(at: int, sign: int = 0) -> int:
        return (at << 9) | (sign << 8) | layer
    low, high = 1 << 44, (1 << 44) + (1 << 24)
    start = _numpy_bits(word(low), magnitude)
    assert _numpy_bits(word(high), magnitude) != start
    while high - low > 1:           # the first magnitude whose value rounds otherwise
        middle = (low + high) // 2
        if _numpy_bits(word(middle), magnitude) == start:
            low = middle
        else:
            high = middle
    for at in (low, high):
        for sign in (0, 1):
            ours = fast_normals.max_bits_checked(_generator_giving(word(at, sign)), 1, magnitude)
            assert ours == _numpy_bits(word(at, sign), magnitude)
    assert _numpy_bits(word(low), magnitude) != _numpy_bits(word(high), magnitude)


@needs_c
@pytest.mark.parametrize("layer", [2, 90, 254])   # (layer 1 has no magnitude taken at once)
def test_the_c_max_pass_keeps_a_layers_larger_magnitude_and_hands_its_bound_to_numpy(
        layer, max_pass_path):
    """Two words of one layer: the larger magnitude first, then a smaller one (the pass keeps
    the largest, not the last). And the words at the layer's bound (found from NumPy's
    routine: the least magnitude it does not decide from the word alone) and one below: the
    same maximum and the generator left where NumPy leaves it."""
    big, small = (1 << 50) + 12345, 1 << 45
    for sign in (0, 1):
        words = ((big << 9) | (sign << 8) | layer, (small << 9) | layer)
        values = gradient_stream.numpy_draw(_generator_giving(*words), 2, 1.0)
        assert fast_normals.max_bits_checked(_generator_giving(*words), 2, 1.0) == \
            int(np.max(values.view(np.uint32) & 0x7FFFFFFF))
    low, high = 0, 1 << 52                   # the bound is in (low, high]
    assert _takes_at_once(layer, low)
    while high - low > 1:
        middle = (low + high) // 2
        if _takes_at_once(layer, middle):
            low = middle
        else:
            high = middle
    for at in (low, high):
        ours, theirs = _generator_giving((at << 9) | layer), _generator_giving((at << 9) | layer)
        top = fast_normals.max_bits_checked(ours, 1, 1.0)
        values = gradient_stream.numpy_draw(theirs, 1, 1.0)
        assert top == int(values.view(np.uint32)[0] & 0x7FFFFFFF)
        assert ours.bit_generator.state == theirs.bit_generator.state


@needs_c
@pytest.mark.parametrize("count", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("order", ["slow first", "slow second", "fast only"])
def test_the_pcg_max_pass_steps_its_two_chains_over_every_word_numpy_takes(count, order,
                                                                          max_pass_path):
    """The PCG pass steps the even and the odd states as two chains: a word NumPy's routine
    decides (it draws more words) as the first or the second of a pair, and passes of odd
    and even lengths, give NumPy's maximum and leave the generator where NumPy does."""
    slow = ((1 << 52) - 1) << 9 | 255          # the last layer's largest magnitude: NumPy's
    fast = (1 << 45) << 9 | 90
    assert not _takes_at_once(255, (1 << 52) - 1) and _takes_at_once(90, 1 << 45)
    words = {"slow first": (slow, fast), "slow second": (fast, slow),
             "fast only": (fast, fast)}[order]
    ours, theirs = _generator_giving(*words), _generator_giving(*words)
    top = fast_normals.max_bits_checked(ours, count, 1.0)
    values = gradient_stream.numpy_draw(theirs, count, 1.0)
    assert top == int(np.max(values.view(np.uint32) & 0x7FFFFFFF))
    assert ours.bit_generator.state == theirs.bit_generator.state


def _mark(generator: np.random.Generator) -> tuple[int, int, int, int]:
    state = generator.bit_generator.state
    value = state["state"]["state"]
    return value >> 64, value & ((1 << 64) - 1), state["has_uint32"], state["uinteger"]


@needs_c
@pytest.mark.parametrize("count", [0, 1, 2, 3, 4, 5, 4096, 70_001])
@pytest.mark.parametrize("order", ["slow first", "slow second", "fast only"])
@pytest.mark.parametrize("magnitude", [1.0, 0.37])
def test_draws_from_a_mark_step_their_two_chains_over_every_word_numpy_takes(count, order,
                                                                          magnitude):
    """`draw_from` draws from a mark's state in C, the even and the odd states as two chains:
    a word NumPy's routine decides (it draws more words) as the first or the second of a
    pair, and draws of odd and even lengths, give NumPy's values, and the generator a mark
    names is left alone."""
    slow = ((1 << 52) - 1) << 9 | 255          # the last layer's largest magnitude: NumPy's
    fast_word = (1 << 45) << 9 | 90
    words = {"slow first": (slow, fast_word), "slow second": (fast_word, slow),
             "fast only": (fast_word, fast_word)}[order]
    ours, theirs = _generator_giving(*words), _generator_giving(*words)
    mark = _mark(ours)
    before = ours.bit_generator.state
    values = fast_normals.draw_from(mark, before["state"]["inc"], count, magnitude)
    expected = gradient_stream.numpy_draw(theirs, count, magnitude)
    assert values is not None and values.dtype == np.float32
    assert values.tobytes() == expected.tobytes()
    assert ours.bit_generator.state == before
    job = fast_normals.job_from(mark, before["state"]["inc"], count, magnitude)
    assert job is not None and job.result().tobytes() == expected.tobytes()  # (its own thread)
    assert ours.bit_generator.state == before


def test_draws_from_a_mark_decline_what_they_were_not_checked_for():
    """A magnitude that is not finite: None (the caller draws through the generator)."""
    generator = np.random.default_rng(3)
    mark = _mark(generator)
    inc = generator.bit_generator.state["state"]["inc"]
    for magnitude in (float("nan"), float("inf")):
        assert fast_normals.draw_from(mark, inc, 10, magnitude) is None


def test_draws_from_a_state_that_differ_from_numpy_are_refused():
    """The check before `draw_from` is used: a value of another state, the last value
    dropped, the state after one word short."""
    def drawing(change):
        def draw_pcg(high, low, inc_high, inc_low, count, magnitude, out):
            generator = np.random.Generator(np.random.PCG64())
            state = generator.bit_generator.state
            state["state"] = {"state": (high << 64) | low, "inc": (inc_high << 64) | inc_low}
            generator.bit_generator.state = state
            out[...] = gradient_stream.numpy_draw(generator, count, magnitude)
            after = generator.bit_generator.state["state"]["state"]
            return change(out, after)
        return draw_pcg

    mask = (1 << 64) - 1
    assert fast_normals._draws_from_state_differ_from_numpy(
        drawing(lambda out, after: (after >> 64, after & mask))) is None

    def other_value(out, after):
        if out.size:
            out[0] = np.float32(out[0] * 2 or 1.0)
        return after >> 64, after & mask

    def dropped(out, after):
        if out.size:
            out[-1] = 0
        return after >> 64, after & mask

    def short(out, after):
        return after >> 64, (after & mask) ^ 1

    for change in (other_value, dropped, short):
        assert fast_normals._draws_from_state_differ_from_numpy(drawing(change)) is not None, \
            change.__name__


@needs_c
def test_jobs_that_differ_from_the_draws_from_a_state_are_refused():
    """The check before `job_from` is used: a job's values against `draw_pcg`'s (checked
    against NumPy before): the same submit passes; one drawn at another magnitude, one value
    short, or from the next state does not."""
    module = fast_normals.module()
    draw_pcg, submit_pcg = module.draw_pcg, module.submit_pcg
    assert fast_normals._jobs_differ_from_draws(submit_pcg, draw_pcg) is None

    class Done:
        def __init__(self, values):
            self.values = values

        def result(self):
            return self.values

    def other_magnitude(*args):
        out = args[6]
        draw_pcg(*args[:5], args[5] * 2, out)
        return Done(out)

    def one_short(*args):
        out = args[6]
        draw_pcg(*args[:6], out)
        return Done(out[:-1] if out.size else np.zeros(1, np.float32))

    def next_state(high, low, inc_high, inc_low, count, magnitude, out):
        draw_pcg(high, (low + 1) & ((1 << 64) - 1), inc_high, inc_low, count, magnitude, out)
        return Done(out)

    for wrong in (other_magnitude, one_short, next_state):
        assert fast_normals._jobs_differ_from_draws(wrong, draw_pcg) is not None, wrong.__name__


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


def test_numpys_pcg64_doubles_are_their_words_top_53_bits():
    """What fastnormals.c's PCG64 gives NumPy's routine for a double (fast_normals checks it
    before stepping PCG64 in C)."""
    assert fast_normals._pcg64_doubles_are_top_53_bits()


@needs_c
def test_the_pcg_max_pass_refuses_bad_arguments():
    max_pcg = fast_normals.module().max_bits_pcg
    assert max_pcg(0, 1, 0, 1, 0, 1.0) == (0, 0, 1)          # no word: the state as it was
    with pytest.raises(TypeError):
        max_pcg(0, 1, 0, 1, 5)
    with pytest.raises(ValueError):
        max_pcg(0, 1, 0, 1, -1, 1.0)
    with pytest.raises(OverflowError):
        max_pcg(1 << 64, 1, 0, 1, 5, 1.0)                    # a half wider than 64 bits
    with pytest.raises(OverflowError):
        max_pcg(-1, 1, 0, 1, 5, 1.0)


@needs_c
def test_the_pcg_max_pass_is_used_for_long_passes_and_not_for_other_generators():
    """Long passes of PCG64 take the C stepping (the same maximum and state), short ones and
    other bit generators NumPy's generator itself."""
    calls = []
    original = fast_normals._max_bits_by_state

    def counted(*args):
        calls.append(args[2])
        return original(*args)
    for generator, count in ((np.random.default_rng(3), fast_normals.PCG_MIN_COUNT),
                             (np.random.default_rng(3), fast_normals.PCG_MIN_COUNT - 1),
                             (np.random.Generator(np.random.MT19937(3)), 1 << 16)):
        expected = np.random.Generator(type(generator.bit_generator)(3))
        fast_normals._max_bits_by_state = counted
        try:
            top = fast_normals.max_bits_checked(generator, count, 1.0)
        finally:
            fast_normals._max_bits_by_state = original
        values = gradient_stream.numpy_draw(expected, count, 1.0)
        assert top == int(np.max(values.view(np.uint32) & 0x7FFFFFFF))
        assert generator.bit_generator.random_raw(4).tolist() == \
            expected.bit_generator.random_raw(4).tolist()          # where NumPy left it
    assert calls == [fast_normals.PCG_MIN_COUNT]


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
