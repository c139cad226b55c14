"""NumPy's standard normals, the very values, drawn ~3x faster in C (`fastnormals.c`).

Why: the seeded gradients are the simulator's largest single cost. Each INA worker draws its
vector twice (the max pass, then the quantize pass), and `Generator.standard_normal` takes
~9.4 ns a value here, where the generator's raw word takes ~2.3. NumPy's ziggurat takes ~99 %
of the words at once: a layer, a sign and a magnitude below the layer's bound give the
magnitude times the layer's width. `fastnormals.c` computes those itself and hands every
other word to NumPy's own routine, so the values and the generator's state after them are
NumPy's.

It learns the layers' bounds and widths from NumPy's routine (scripted words), checks the
words at every layer's edges (the bound itself, one below and one above it) against NumPy's
routine, then draws whole vectors of several seeds and magnitudes both ways and compares
their bytes and the generators' states after them. Only then is `drawer()` given out;
otherwise it is None and `hosts.gradient_stream.draw` draws with NumPy (as it does without a
C compiler, without NumPy's random library, or with `INAEMU_NATIVE=0`). `why_not()` says
which.

The max pass (`max_bits`) keeps only each layer's largest magnitude, and for long passes of
PCG64 (NumPy's default) steps the generator in C from its public `state`, written back after
(two chains at once): 4.1 ns a value became ~2.4 here. Checked like the draw (whole passes and
states against NumPy's, and NumPy's PCG64 doubles against the words' top 53 bits); another bit
generator, a short pass, or a failed check takes NumPy's generator itself.

Built at first use and cached like the switch runtime's C (`nativebuild.load_source`), linked
with NumPy's `libnpyrandom.a`. The simulator has `hosts.gradient_stream` draw with it
(`install`, called by `inaemu.sim`), and the ring check's exact sums (`exact_sums`) too; the
host agents and anything else that never imports the simulator draw with NumPy, the same
values.
"""

from __future__ import annotations

import math
import operator
import threading
from array import array
from pathlib import Path
from typing import Callable

import numpy as np

from hosts import draw_ahead, gradient_stream

PREFIX = "inaemu_fast_normals_"
CHECK_SEEDS = (0, 1, 2, 12345)
CHECK_VALUES = 1 << 17          # per seed and magnitude: ~1,500 words NumPy decides itself
# max passes at least this long step PCG64 here, from its public state (fastnormals.c's
# `max_bits_pcg`): the state's round trip through its dict costs ~4 us, what ~3,500 values gain
PCG_MIN_COUNT = 1 << 13
_LOW_64 = (1 << 64) - 1

_lock = threading.Lock()
_state: dict = {}


def libraries() -> tuple[str, ...] | None:
    """The linker's arguments for NumPy's random library (what NumPy ships for C code that
    draws as its generators do), or None when this NumPy has none."""
    random_lib = Path(np.__file__).parent / "random" / "lib"
    if not (random_lib / "libnpyrandom.a").exists():
        return None
    link = [f"-L{random_lib}", "-lnpyrandom"]
    for core in ("_core", "core"):                    # (NumPy 2's name, then 1's)
        math_lib = Path(np.__file__).parent / core / "lib"
        if (math_lib / "libnpymath.a").exists():
            link += [f"-L{math_lib}", "-lnpymath"]
            break
    return (*link, "-lm")


def module():
    """The built module (its `add_drawn` draws with NumPy's routine until the checks passed),
    or None when it cannot be built here."""
    _loaded()
    return _state["module"]


def drawer() -> Callable[[np.random.Generator, int, float], np.ndarray] | None:
    """`draw(generator, count, magnitude)`: `generator.standard_normal(count)` times
    `magnitude` as float32, the same bytes and the generator left where NumPy leaves it; None
    when the C path is not here or did not draw as NumPy does (`why_not`)."""
    _loaded()
    return _state["drawer"]


def _loaded() -> None:
    if "drawer" not in _state:
        with _lock:
            if "drawer" not in _state:
                _state["module"], _state["drawer"] = _load()


def why_not() -> str | None:
    """Why `drawer()` is None (after it was asked for), else None."""
    return _state.get("why_not")


def install() -> None:
    """`hosts.gradient_stream.draw` draws with this module from now on (built and checked at
    its first draw; NumPy's own draw wherever the check fails or no C can be built), and the
    draws ahead (`hosts.draw_ahead`) on this module's own thread, which needs no GIL."""
    gradient_stream.use_fast_draw(draw_checked, max_bits_checked)
    draw_ahead.use_draw_worker(draw_job)


def draw_job(generator: np.random.Generator, count: int, magnitude: float):
    """`draw_checked(generator, count, magnitude)` as a job on fastnormals.c's own thread (a
    `DrawJob`: result(), cancel(), cancelled(), done()), or None where the C does not draw:
    the caller then draws as it would have. The generator is the job's until it is done."""
    if drawer() is None or not math.isfinite(magnitude):
        return None
    count = operator.index(count)
    bit_generator = generator.bit_generator
    return _state["module"].submit(bit_generator.capsule, count, float(magnitude),
                                   np.empty(count, np.float32), bit_generator)


def draw_checked(generator: np.random.Generator, count: int,
                 magnitude: float) -> np.ndarray | None:
    """`drawer()`'s draw, or None when there is none or the magnitude is not finite (the
    checks covered finite ones): the caller then draws with NumPy."""
    fast = drawer()
    if fast is None or not math.isfinite(magnitude):
        return None
    return fast(generator, count, magnitude)


def max_bits_checked(generator: np.random.Generator, count: int,
                     magnitude: float) -> int | None:
    """`gradient_stream.max_bits_of` in one C pass that keeps no value, or None where
    `draw_checked` would not draw (the caller then draws with NumPy)."""
    if drawer() is None or not math.isfinite(magnitude):
        return None
    return _state["max_bits"](generator, count, magnitude)


def marks_after(words, increment: int, steps) -> array | None:
    """A PCG64 stream's marks after each of `steps` values in turn, from the mark `words`
    (state high, state low, has_uint32, uinteger: inaemu/sim/seekable_gradient.py's) of a
    generator whose increment is `increment`: 4 x len(steps) words, each mark where drawing
    that many values leaves the generator, for the cost of a max pass and without the GIL;
    None where the C does not step PCG64 (checked against NumPy's draws at load)."""
    _loaded()
    marks = _state.get("pcg_marks")
    if marks is None:
        return None
    high, low, has_uint32, uinteger = words
    try:
        states = marks(high, low, increment >> 64, increment & _LOW_64, steps)
    except LookupError:                 # (NumPy's routine asked for 32 bits: not served)
        return None
    pairs = array("Q", states)
    out = array("Q", bytes(32 * len(steps)))
    out[0::4], out[1::4] = pairs[0::2], pairs[1::2]
    out[2::4] = array("Q", [has_uint32]) * len(steps)
    out[3::4] = array("Q", [uinteger]) * len(steps)
    return out


def draw_from(words, increment: int, count: int, magnitude: float) -> np.ndarray | None:
    """`gradient_stream.draw`'s next `count` values of a PCG64 stream at the mark `words`
    (state high, state low, has_uint32, uinteger) of a generator whose increment is
    `increment`, drawn from the state in C, two words at a time (~30 % faster than through
    the generator, and no state set on it); None where the C does not draw so (checked
    against NumPy's draws at load) or NumPy's routine asked for 32 bits."""
    _loaded()
    draw_c = _state.get("draw_pcg")
    if draw_c is None or not math.isfinite(magnitude):
        return None
    count = operator.index(count)
    out = np.empty(count, np.float32)
    high, low = words[0], words[1]
    try:
        draw_c(high, low, increment >> 64, increment & _LOW_64, count, float(magnitude), out)
    except LookupError:
        return None
    return out


def job_from(words, increment: int, count: int, magnitude: float):
    """`draw_from(words, increment, count, magnitude)` as a job on fastnormals.c's own thread
    (a `DrawJob`: its result() the values, or LookupError where `draw_from` would give None),
    or None where the C does not draw so: a ring rank's next read drawn ahead without a
    Python thread or the GIL (inaemu/sim/seekable_gradient.py)."""
    _loaded()
    submit_c = _state.get("submit_pcg")
    if submit_c is None or not math.isfinite(magnitude):
        return None
    count = operator.index(count)
    return submit_c(words[0], words[1], increment >> 64, increment & _LOW_64, count,
                    float(magnitude), np.empty(count, np.float32))


def _jobs_differ_from_draws(submit_pcg, draw_pcg) -> str | None:
    """Where `submit_pcg`'s jobs give other values than `draw_pcg` (checked against NumPy)
    from the same state, or None."""
    for seed in CHECK_SEEDS:
        state = np.random.default_rng(seed).bit_generator.state["state"]
        args = (state["state"] >> 64, state["state"] & _LOW_64, state["inc"] >> 64,
                state["inc"] & _LOW_64)
        for magnitude, count in ((1.0, 4097), (1e-3, 1001), (3.0, 1), (1.0, 0)):
            drawn = np.empty(count, np.float32)
            draw_pcg(*args, count, magnitude, drawn)
            job = submit_pcg(*args, count, magnitude, np.empty(count, np.float32))
            if job.result().tobytes() != drawn.tobytes():
                return f"fastnormals.c's draws on its thread from a PCG64 state differ from " \
                       f"draw_pcg's (seed {seed}, x{magnitude}, {count} values)"
    return None


def _draws_from_state_differ_from_numpy(draw_pcg) -> str | None:
    """Where `draw_pcg` draws other values than NumPy's generator from the same state, or
    leaves another state, or None."""
    for seed in CHECK_SEEDS:
        for magnitude, count in ((1.0, CHECK_VALUES), (1e-3, 1001), (3.0, 1), (1.0, 2),
                                 (1.0, 0)):
            generator = np.random.default_rng(seed)
            state = generator.bit_generator.state["state"]
            out = np.empty(count, np.float32)
            high, low = draw_pcg(state["state"] >> 64, state["state"] & _LOW_64,
                                 state["inc"] >> 64, state["inc"] & _LOW_64, count, magnitude,
                                 out)
            values = gradient_stream.numpy_draw(generator, count, magnitude)
            after = generator.bit_generator.state["state"]["state"]
            if out.tobytes() != values.tobytes() or (high << 64) | low != after:
                return f"fastnormals.c's draws from a PCG64 state differ from NumPy's (seed " \
                       f"{seed}, x{magnitude}, {count} values)"
    return None


def _marks_differ_from_numpy(pcg_marks) -> str | None:
    """Where `pcg_marks` leaves a generator otherwise than drawing the same steps with NumPy
    does, or None."""
    for seed in CHECK_SEEDS:
        steps = [0, 1, 2, 4095, 16384, 1, CHECK_VALUES // 4, 7]
        generator = np.random.default_rng(seed)
        state = generator.bit_generator.state["state"]
        got = array("Q", pcg_marks(state["state"] >> 64, state["state"] & _LOW_64,
                                   state["inc"] >> 64, state["inc"] & _LOW_64, steps))
        for index, count in enumerate(steps):
            gradient_stream.numpy_draw(generator, count)
            after = generator.bit_generator.state["state"]["state"]
            if (got[2 * index] << 64) | got[2 * index + 1] != after:
                return f"fastnormals.c's PCG64 steps differ from NumPy's (seed {seed}, " \
                       f"step {index} of {count} values)"
    return None


def _load():
    """(the module or None, the checked drawer or None), `why_not` saying what is missing."""
    from p4switch.runtime.cgen import nativebuild
    link = libraries()
    if link is None:
        _state["why_not"] = "this NumPy ships no libnpyrandom.a"
        return None, None
    if not nativebuild.enabled():
        _state["why_not"] = "C is off (INAEMU_NATIVE=0)"
        return None, None
    source = (Path(__file__).parent / "fastnormals.c").read_text()
    built = nativebuild.load_source(PREFIX, source, link)
    if built is None:
        _state["why_not"] = "fastnormals.c could not be built: " + \
            "; ".join(nativebuild.why_not.values())
        return None, None
    built.learn()
    differ = built.check_bounds()
    if differ:
        _state["why_not"] = f"fastnormals.c decides words at a layer's edge otherwise " \
                            f"than NumPy: (layer, sign, magnitude) {differ[:3]}"
        return built, None
    draw_c = built.draw

    def draw(generator: np.random.Generator, count: int, magnitude: float) -> np.ndarray:
        count = operator.index(count)         # (a NumPy integer too, as NumPy takes one)
        out = np.empty(count, np.float32)
        bit_generator = generator.bit_generator
        with bit_generator.lock:
            draw_c(bit_generator.capsule, count, float(magnitude), out)
        return out

    max_c = built.max_bits
    # (C's PCG64 gives NumPy's routine the doubles NumPy's PCG64 gives: checked, not assumed)
    max_pcg = built.max_bits_pcg if _pcg64_doubles_are_top_53_bits() else None

    def max_bits(generator: np.random.Generator, count: int, magnitude: float) -> int:
        count = operator.index(count)
        bit_generator = generator.bit_generator
        with bit_generator.lock:
            if count >= PCG_MIN_COUNT and max_pcg is not None and \
                    type(bit_generator) is np.random.PCG64:
                top = _max_bits_by_state(max_pcg, bit_generator, count, float(magnitude))
                if top is not None:
                    return top
            return max_c(bit_generator.capsule, count, float(magnitude))

    _state["max_bits"] = max_bits
    problem = _differs_from_numpy(draw) or _max_differs_from_numpy(max_bits)
    if problem is not None:
        _state["why_not"] = problem
        return built, None
    built.trust()
    if max_pcg is not None:      # (PCG64 stepped here: each use checked on its own)
        for name, differs in (("pcg_marks", _marks_differ_from_numpy),
                              ("draw_pcg", _draws_from_state_differ_from_numpy)):
            problem = differs(getattr(built, name))
            _state[name if problem is None else "why_not_" + name] = \
                getattr(built, name) if problem is None else problem
        if "draw_pcg" in _state:
            problem = _jobs_differ_from_draws(built.submit_pcg, built.draw_pcg)
            _state["submit_pcg" if problem is None else "why_not_submit_pcg"] = \
                built.submit_pcg if problem is None else problem
    return built, draw


def _max_bits_by_state(max_pcg, bit_generator, count: int, magnitude: float) -> int | None:
    """`max_bits_pcg` from the PCG64 generator's public state, which then takes the state
    after the words drawn; None (the state untouched) where NumPy's routine asked for a word
    the C does not serve. The caller holds the generator's lock."""
    state = bit_generator.state
    words = state["state"]
    try:
        top, high, low = max_pcg(words["state"] >> 64, words["state"] & _LOW_64,
                                 words["inc"] >> 64, words["inc"] & _LOW_64, count, magnitude)
    except LookupError:
        return None
    words["state"] = (high << 64) | low
    bit_generator.state = state
    return top


def _pcg64_doubles_are_top_53_bits() -> bool:
    """Does NumPy's PCG64 make each double of a word's top 53 bits over 2^53, as
    fastnormals.c's PCG64 gives them to NumPy's routine (the words it decides)?"""
    doubles, words = np.random.default_rng(11), np.random.default_rng(11)
    drawn = doubles.random(256)
    made = (words.bit_generator.random_raw(256) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    return drawn.tobytes() == made.tobytes()


def _differs_from_numpy(draw) -> str | None:
    """Where `draw` gives other bytes or leaves the generator elsewhere than NumPy, or None."""
    for seed in CHECK_SEEDS:
        for magnitude in (1.0, 1e-3, 3.0):
            ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
            values = draw(ours, CHECK_VALUES, magnitude)
            expected = gradient_stream.numpy_draw(theirs, CHECK_VALUES, magnitude)
            if values.tobytes() != expected.tobytes():
                return f"fastnormals.c drew other values than NumPy (seed {seed}, x{magnitude})"
            if ours.bit_generator.state != theirs.bit_generator.state:
                return f"fastnormals.c left the generator elsewhere (seed {seed})"
    return None


def _max_differs_from_numpy(max_bits) -> str | None:
    """Where `max_bits(generator, count, magnitude)` gives another maximum than NumPy's
    draw, or leaves the generator elsewhere, or None."""
    for seed in CHECK_SEEDS:
        for magnitude, count in ((1.0, CHECK_VALUES), (1e-3, 1000), (3.0, 1), (1.0, 0)):
            ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
            top = max_bits(ours, count, magnitude)
            values = gradient_stream.numpy_draw(theirs, count, magnitude)
            expected = int(np.max(values.view(np.uint32) & 0x7FFFFFFF)) if count else 0
            if top != expected or ours.bit_generator.state != theirs.bit_generator.state:
                return f"fastnormals.c's max pass differs from NumPy's (seed {seed}, " \
                       f"x{magnitude}, {count} values)"
    return None
