"""The ring streamed (docs/sim-native.md, "The ring streamed"): RingSession reads its rank's values per
slice and hands each slice of the result to a sink; the simulator's runs without kept results
use it, with SeekableGradient inputs and StreamedCheck.for_ring's verdicts. The same bytes on
the wire, the same trace and records as with whole vectors, and memory that does not grow
with the vector."""

import tracemalloc
from array import array
from concurrent.futures import Future

import numpy as np
import pytest

from hosts.agent import gradient
from hosts.draw_ahead import DrawAhead
from hosts.errors import UsageError
from hosts.ring_session import SLICE_VALUES, RingSession, ring_error_bound, segment_bounds
from inaemu.sim import SimJob, simulate
from inaemu.sim.driver import ring_bound, ring_cuts
from inaemu.sim.native import fast_normals
from inaemu.sim.seekable_gradient import SeekableGradient
from inaemu.sim.streamed_check import StreamedCheck
from tests.hosts.test_ring_session import run_ring
from topologies.builders import fat_tree, star


# ---- SeekableGradient ------------------------------------------------------------------------

@pytest.mark.parametrize("length,n,slice_values", [(1, 1, 4), (1000, 3, 7), (70_001, 5, 4096)])
def test_seekable_reads_are_the_gradient_in_any_order(length, n, slice_values):
    whole = gradient(4, 2, length)
    cuts = ring_cuts(length, n, slice_values)
    marks = array("Q")
    reader = SeekableGradient(4, 2, length, cuts, marks)
    other = SeekableGradient(4, 2, length, cuts, marks)     # shares the marks
    rng = np.random.default_rng(length)
    starts = cuts[:]
    rng.shuffle(starts)
    for first in starts:
        end = min(length, first + int(rng.integers(0, 3 * slice_values)))
        assert np.array_equal(reader.read(first, end), whole[first:end])
        assert np.array_equal(other.read(first, end), whole[first:end])
    # with every cut marked, a read from a cut draws just its range
    drawn = other.drawn
    first = cuts[len(cuts) // 2]
    assert np.array_equal(other.read(first, length), whole[first:])
    assert other.drawn - drawn == length - first
    assert reader.marked == other.marked == len(cuts)
    with pytest.raises(ValueError):
        reader.read(0, length + 1)
    with pytest.raises(ValueError):
        SeekableGradient(4, 2, length, [1, 2])


def test_a_first_read_far_in_skips_without_holding_the_skipped_values():
    length = 1 << 20
    reader = SeekableGradient(1, 0, length, [0, length - 10])
    tracemalloc.start()
    try:
        values = reader.read(length - 10, length)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.array_equal(values, gradient(1, 0, length)[-10:])
    assert peak < length                 # not the 4 MiB of float32 skipped (nor 8 of float64)


@pytest.mark.parametrize("length,n,slice_values,read_first",
                         [(70_001, 5, 4096, 0), (70_001, 5, 4096, 3), (1000, 3, 7, 1),
                          (1, 1, 4, 0), (9_000, 7, 300, 40)])
def test_marks_stepped_in_c_are_the_generators_own(length, n, slice_values, read_first):
    """`mark_all` from the first mark, or after reads recorded some: the marks a read through
    the vector records, nothing drawn for them, and every read after them draws its range
    alone (a rank's first read far in skips nothing)."""
    cuts = ring_cuts(length, n, slice_values)
    reader = SeekableGradient(4, 2, length, cuts)
    if read_first:
        reader.read(0, cuts[min(read_first, len(cuts) - 1)])
    drawn = reader.drawn
    if fast_normals.marks_after((0, 0, 0, 0), 1, [1]) is None:
        # (no C here: the reads record them; only all marked already is done)
        assert reader.mark_all() == (reader.marked == len(cuts))
        return
    assert reader.mark_all()
    assert reader.drawn == drawn and reader.marked == len(cuts)
    assert reader.marks == _marks_of(4, 2, length, cuts)
    assert reader.mark_all() and reader.marked == len(cuts)        # (again: nothing to do)
    whole = gradient(4, 2, length)
    for first in reversed(cuts):
        drawn = reader.drawn
        assert np.array_equal(reader.read(first, length), whole[first:])
        assert reader.drawn - drawn == length - first
    # the reads from marks drew from the marks' states (`draw_from`); one through the
    # generator after them (a range that does not start at a cut) still reads the gradient
    if length > 2:
        assert np.array_equal(reader.read(cuts[-1], length), whole[cuts[-1]:])
        middle = (cuts[-1] + length) // 2
        assert np.array_equal(reader._read(middle, length), whole[middle:])


def test_pcg_marks_that_differ_from_numpy_are_refused():
    """The check before C marks are used: a step one value long, a step's state from
    another generator."""

    def stepped(change):
        def pcg_marks(high, low, inc_high, inc_low, steps):
            generator = np.random.Generator(np.random.PCG64())
            state = generator.bit_generator.state
            state["state"] = {"state": (high << 64) | low, "inc": (inc_high << 64) | inc_low}
            generator.bit_generator.state = state
            words = array("Q")
            for index, count in enumerate(steps):
                generator.standard_normal(change(index, count))
                after = generator.bit_generator.state["state"]["state"]
                words.extend((after >> 64, after & ((1 << 64) - 1)))
            return words.tobytes()
        return pcg_marks

    assert fast_normals._marks_differ_from_numpy(stepped(lambda index, count: count)) is None
    for change in (lambda index, count: count + (index == 3),
                   lambda index, count: count + 1 if count == 0 else count):
        assert fast_normals._marks_differ_from_numpy(stepped(change)) is not None


# ---- SeekableGradient drawn ahead (a ring rank's reads, predicted) ------------------------------

def _ring_reads(rank, n, bounds, slice_values):
    """The ranges a streamed ring rank reads, in its order: its segment's slices, then the
    segment before it, and so on (every segment once)."""
    for step in range(n):
        index = (rank - step) % n
        for first in range(bounds[index], bounds[index + 1], slice_values):
            yield first, min(first + slice_values, bounds[index + 1])


def _marks_of(seed, rank, length, cuts):
    reader = SeekableGradient(seed, rank, length, cuts)
    reader.read(0, length)
    return reader.marks


class _InlineAhead(DrawAhead):
    """Draws ahead at once, on the caller's thread: what is drawn ahead no longer depends on
    how fast a thread is, so a test can count it."""

    def submit(self, work, *args):
        future = Future()
        future.set_result(work(*args))
        return future


@pytest.mark.parametrize("length,n,slice_values,ahead_values",
                         [(70_001, 5, 4096, 1 << 16), (70_001, 5, 4096, 5000),
                          (9_000, 7, 300, 1000), (3, 4, 2, 2)])
@pytest.mark.parametrize("rank", [0, 3])
@pytest.mark.parametrize("inline", [False, True])
def test_a_rank_s_reads_drawn_ahead_are_its_gradient_and_its_marks(
        monkeypatch, length, n, slice_values, ahead_values, rank, inline):
    from inaemu.sim import seekable_gradient
    monkeypatch.setattr(seekable_gradient, "AHEAD_VALUES", ahead_values)
    monkeypatch.setattr(seekable_gradient, "THREAD_AHEAD_MIN", 0)    # the Python threads'
    monkeypatch.setattr(seekable_gradient, "job_from", lambda *args: None)   # (not C jobs)
    whole = gradient(4, rank, length)
    bounds = segment_bounds(length, n)
    cuts = ring_cuts(length, n, slice_values)
    with (_InlineAhead if inline else DrawAhead)(threads=1) as ahead:
        reader = SeekableGradient(4, rank, length, cuts, ahead=ahead, segments=bounds)
        index = rank % n
        reader.draw_ahead(bounds[index], bounds[index + 1])
        for first, end in _ring_reads(rank, n, bounds, slice_values):
            assert np.array_equal(reader.read(first, end), whole[first:end])
        # what is held ahead is given back as it is read: a run held and one drawn at most
        largest = max(b - a for a, b in zip(bounds, bounds[1:]))
        assert ahead.held <= 2 * max(ahead_values, largest)
    # every cut marked, with the generator's own state there (the thread's marks taken in order)
    assert reader.marks == _marks_of(4, rank, length, cuts)
    if inline and bounds[index] < bounds[index + 1]:
        # every read was predicted (the first, drawn ahead when it is not empty): nothing
        # drawn (or skipped) here
        assert reader.drawn_ahead == reader.drawn >= length
        if ahead_values % slice_values == 0:      # runs of whole slices: each value once
            assert reader.drawn == length
    else:
        assert reader.drawn >= length


needs_jobs = pytest.mark.skipif(
    fast_normals.job_from((0, 0), 1, 0, 1.0) is None,
    reason="no fastnormals.c jobs here (no C, or unchecked)")


@needs_jobs
@pytest.mark.parametrize("length,n,slice_values", [(70_001, 5, 4096), (9_000, 7, 300),
                                                   (3, 4, 2)])
@pytest.mark.parametrize("rank", [0, 3])
def test_a_rank_s_next_reads_are_drawn_by_c_jobs_from_its_marks(length, n, slice_values, rank):
    """With every mark made (`mark_all`, as `marks_ahead` does before a run), each read after
    the first is the one a fastnormals.c job drew on its own thread from the read's mark,
    predicted slice by slice (segments longer than a slice, the segment's last shorter one,
    empty segments): the gradient's values, each drawn once."""
    whole = gradient(4, rank, length)
    bounds = segment_bounds(length, n)
    cuts = ring_cuts(length, n, slice_values)
    reads = list(_ring_reads(rank, n, bounds, slice_values))
    with DrawAhead(threads=1) as ahead:
        reader = SeekableGradient(4, rank, length, cuts, ahead=ahead, segments=bounds)
        assert reader.mark_all()
        for first, end in reads:
            assert np.array_equal(reader.read(first, end), whole[first:end])
    assert reader.marks == _marks_of(4, rank, length, cuts)
    assert reader.drawn == length                       # each value once
    first_read = next((end - first for first, end in reads if end > first), 0)
    assert reader.drawn_ahead == length - first_read    # all but the first read: by jobs


@needs_jobs
def test_a_read_a_job_did_not_predict_is_drawn_here_and_the_job_let_go():
    length, n = 50_000, 4
    whole = gradient(2, 1, length)
    bounds, cuts = segment_bounds(length, n), ring_cuts(length, n, 1000)
    with DrawAhead(threads=1) as ahead:
        reader = SeekableGradient(2, 1, length, cuts, ahead=ahead, segments=bounds)
        reader.mark_all()
        assert np.array_equal(reader.read(bounds[1], bounds[1] + 1000),
                              whole[bounds[1]:bounds[1] + 1000])
        assert reader._job is not None and ahead.held == 1000       # the next slice's job
        assert np.array_equal(reader.read(bounds[3], bounds[3] + 1000),   # not that one
                              whole[bounds[3]:bounds[3] + 1000])
        assert reader.drawn_ahead == 0 and reader.drawn == 2000
        assert np.array_equal(reader.read(bounds[3] + 1000, bounds[3] + 2000),
                              whole[bounds[3] + 1000:bounds[3] + 2000])
        assert reader.drawn_ahead == 1000
        assert ahead.held == 1000       # (the next slice's job: what a job holds is counted)


def test_a_read_the_prediction_missed_and_a_closed_pool_still_read_the_gradient():
    length, n = 50_000, 4
    whole = gradient(2, 1, length)
    bounds, cuts = segment_bounds(length, n), ring_cuts(length, n, 1000)
    with DrawAhead(threads=1) as ahead:
        reader = SeekableGradient(2, 1, length, cuts, ahead=ahead, segments=bounds)
        assert np.array_equal(reader.read(bounds[1], bounds[1] + 1000),
                              whole[bounds[1]:bounds[1] + 1000])
        # not the predicted next range: the pending draw is taken (its marks kept)
        assert np.array_equal(reader.read(bounds[3], bounds[3] + 1000),
                              whole[bounds[3]:bounds[3] + 1000])
        assert np.array_equal(reader.read(0, 1000), whole[:1000])
    # after closing: a draw that was pending or cancelled is read here
    assert np.array_equal(reader.read(1000, 2000), whole[1000:2000])
    assert np.array_equal(reader.read(bounds[2], length), whole[bounds[2]:])
    assert reader.marks == _marks_of(2, 1, length, cuts)


def test_nothing_is_drawn_ahead_beyond_the_budget_and_bad_segments_are_refused():
    length, n = 40_000, 4
    bounds, cuts = segment_bounds(length, n), ring_cuts(length, n, 1000)
    with DrawAhead(threads=1, held=999) as ahead:
        reader = SeekableGradient(3, 0, length, cuts, ahead=ahead, segments=bounds)
        for first, end in _ring_reads(0, n, bounds, 1000):
            assert np.array_equal(reader.read(first, end), gradient(3, 0, length)[first:end])
            assert ahead.held == 0
    with pytest.raises(ValueError, match="segments"):
        SeekableGradient(3, 0, length, cuts, segments=[0, 5, length])      # 5 is not a cut
    with pytest.raises(ValueError, match="segments"):
        SeekableGradient(3, 0, length, cuts, segments=[0, 20_000])


@pytest.mark.parametrize("later_values", [1 << 22, 5000])
@pytest.mark.parametrize("close_first", [False, True])
def test_the_ring_check_judged_on_a_thread_gives_the_same_verdicts(monkeypatch, later_values,
                                                                   close_first):
    """Blocks judged on the drawing thread (or, beyond LATER_VALUES waiting, here with the
    draws split), folded in each worker's order, and judged here when the threads closed
    first: the verdicts of a check without threads, wrong sums included."""
    from inaemu.sim import streamed_check
    monkeypatch.setattr(streamed_check, "LATER_VALUES", later_values)
    n, length = 5, 30_000
    bounds, cuts = segment_bounds(length, n), ring_cuts(length, n, 4096)
    exact = sum(gradient(6, w, length).astype(np.float64) for w in range(n))
    result = exact.astype(np.float32)
    wrong = result.copy()
    wrong[5000:5010] += 0.25               # worker 2's sum is off in one block
    at = next(i for i, cut in enumerate(cuts) if cut > 5000)
    wrong_block = cuts[at] - cuts[at - 1]
    verdicts = []
    for threads in (0, 1):
        with DrawAhead(threads=threads) as ahead:
            check = StreamedCheck.for_ring(seed=6, n=n, length=length, cuts=cuts,
                                           segments=bounds, ahead=ahead)
            sinks = [check.sink(w, ring_bound(n, "float32")) for w in range(n)]
            for first, end in zip(cuts, cuts[1:] + [length]):
                for w in range(n):
                    sinks[w](first, (wrong if w == 2 else result)[first:end].copy())
            if not close_first:
                verdicts.append([check.verdict(w, True) for w in range(n)])
        if close_first:
            verdicts.append([check.verdict(w, True) for w in range(n)])
        assert check.values_drawn == n * (length + wrong_block)   # that block judged twice
    assert verdicts[0] == verdicts[1]
    assert [v[3] for v in verdicts[1]] == [True, True, False, True, True]


# ---- RingSession streamed --------------------------------------------------------------------

class _CountingSource:
    """A rank's values through read(), counting how often each element is read."""

    def __init__(self, values):
        self.values, self.size = values, values.size
        self.reads = np.zeros(values.size, np.int64)

    def read(self, first, end):
        self.reads[first:end] += 1
        return self.values[first:end].copy()


@pytest.mark.parametrize("accumulate", ["float32", "float64"])
@pytest.mark.parametrize("n,length,slice_values", [(1, 10, 4), (2, 37, 5), (3, 2, 4),
                                                   (5, 103, 7), (8, 1000, 64)])
def test_a_streamed_ring_sends_the_same_bytes_and_sinks_the_same_bits(n, length, slice_values,
                                                                      accumulate):
    rng = np.random.default_rng(n * length)
    vectors = [(rng.standard_normal(length) * 100).astype(np.float32) for _ in range(n)]
    whole = [RingSession(rank=r, n=n, accumulate=accumulate, slice_values=slice_values)
             for r in range(n)]
    whole_bytes = run_ring(whole, vectors, cut=11)
    streamed = [RingSession(rank=r, n=n, accumulate=accumulate, slice_values=slice_values)
                for r in range(n)]
    sources = [_CountingSource(v) for v in vectors]
    got = [np.full(length, np.nan, np.float32) for _ in range(n)]
    firsts = [[] for _ in range(n)]

    def sink_of(r):
        def sink(first, values):
            assert values.dtype == np.float32 and values.size
            assert np.all(np.isnan(got[r][first:first + values.size]))   # each element once
            got[r][first:first + values.size] = values
            firsts[r].append(first)
        return sink
    streamed_bytes = run_ring(streamed, sources, cut=11, sinks=[sink_of(r) for r in range(n)])
    assert streamed_bytes == whole_bytes
    for r in range(n):
        assert streamed[r].done and streamed[r].result is None
        assert got[r].tobytes() == whole[r].result.tobytes()
        assert np.all(sources[r].reads == 1)          # each own element read once
        assert streamed[r].counters == whole[r].counters
    bounds = segment_bounds(length, n)
    if n > 1:   # rank 0's result comes segment 1 first (its reduce-scatter's end), then 0, n-1..
        order = [(1 - s) % n for s in range(n)]
        assert firsts[0] == [first for i in order
                             for first in range(bounds[i], bounds[i + 1], slice_values)]


def test_a_streamed_session_is_reusable_and_refuses_a_source_without_reads():
    n, length = 3, 50
    vectors = [np.arange(length, dtype=np.float32) * (r + 1) for r in range(n)]
    sessions = [RingSession(rank=r, n=n, slice_values=8) for r in range(n)]
    for call in range(2):
        got = [np.zeros(length, np.float32) for _ in range(n)]
        sinks = [lambda first, v, g=g: g.__setitem__(slice(first, first + v.size), v)
                 for g in got]
        run_ring(sessions, [_CountingSource(v) for v in vectors], sinks=sinks)
        assert all(np.array_equal(g, np.arange(length, dtype=np.float32) * 6) for g in got)
        assert all(s.calls == call + 1 for s in sessions)
    with pytest.raises(UsageError, match="source"):
        RingSession(rank=0, n=2).start(np.zeros(4, np.float32).tolist(), sink=print)


# ---- StreamedCheck.for_ring ----------------------------------------------------------------

def _ring_check(n, length, slice_values=64):
    cuts = ring_cuts(length, n, slice_values)
    check = StreamedCheck.for_ring(seed=3, n=n, length=length, cuts=cuts)
    sinks = [check.sink(w, ring_bound(n, "float32")) for w in range(n)]
    vectors = [gradient(3, w, length) for w in range(n)]
    exact = np.sum(np.array(vectors, np.float64), axis=0)
    abs_sum = np.sum(np.abs(np.array(vectors, np.float64)), axis=0)
    return check, sinks, cuts, exact, abs_sum


def test_the_ring_check_judges_each_worker_as_a_whole_result_would_be_judged():
    """The same verdict as driver.judge_worker's on the whole vector; a worker whose one
    value is off by more than its bound is not correct, the others are."""
    n, length = 4, 1000
    check, sinks, cuts, exact, abs_sum = _ring_check(n, length)
    result = exact.astype(np.float32)
    wrong = result.copy()
    wrong[700] += np.float32(1e-3)
    for first, end in zip(cuts, cuts[1:] + [length]):
        for w in range(n):
            sinks[w](first, (wrong if w == 2 else result)[first:end].copy())
    for w in range(n):
        check.end(w)
    bound = ring_error_bound(abs_sum, result, n)
    for w in range(n):
        values = wrong if w == 2 else result
        diff = np.abs(values.astype(np.float64) - exact)
        max_error, mean, largest, correct = check.verdict(w, True)
        assert (max_error, largest, correct) == (float(diff.max()), float(bound.max()),
                                                 bool(np.all(diff <= bound)))
        assert mean == pytest.approx(float(diff.mean()), rel=1e-12)
    assert [check.verdict(w, True)[3] for w in range(n)] == [True, True, False, True]
    assert check.most_blocks_held <= len(cuts)


def test_the_ring_check_draws_each_block_once_when_the_workers_agree():
    n, length = 3, 640
    check, sinks, cuts, exact, _ = _ring_check(n, length)
    result = exact.astype(np.float32)
    for first, end in zip(cuts, cuts[1:] + [length]):
        for w in range(n):
            sinks[w](first, result[first:end].copy())
    assert check.values_drawn == n * length      # every rank once, not once per worker
    assert all(check.verdict(w, True)[3] for w in range(n))


# ---- simulated runs: streamed against whole vectors -------------------------------------------

def _same_run(topology, jobs, **kwargs):
    kept_trace, streamed_trace = [], []
    kept = simulate(topology, jobs, algo="ring", trace=kept_trace, **kwargs)
    streamed = simulate(topology, jobs, algo="ring", trace=streamed_trace,
                        keep_results=False, **kwargs)
    return kept, streamed, kept_trace, streamed_trace


@pytest.mark.parametrize("core", ["python", "native"])
@pytest.mark.parametrize("loss,accumulate", [(0.0, "float32"), (3.0, "float32"),
                                             (1.0, "float64")])
def test_a_streamed_ring_run_is_the_same_run(loss, accumulate, core):
    from inaemu.sim.native import native_loop_class
    if core == "native" and native_loop_class() is None:
        pytest.skip("no native core here")
    topology = fat_tree(4)
    jobs = [SimJob(1, tuple(h.name for h in topology.hosts)[:6])]
    # 70,001 values over 6 ranks: segments of 11,666-11,667 values, each sliced 16,384 at most
    kept, streamed, kept_trace, streamed_trace = _same_run(
        topology, jobs, size_bytes=4 * 70_001, seed=5, loss=loss, bw=100,
        ring_accumulate=accumulate, core=core)
    assert kept.correct and streamed.correct
    assert streamed_trace == kept_trace
    assert (streamed.virtual_s, streamed.frames, streamed.events) == \
        (kept.virtual_s, kept.frames, kept.events)
    for old, new in zip(kept.records, streamed.records):
        assert new.result is None and old.result is not None
        assert (new.time_s, new.retransmissions, new.bytes_sent, new.max_abs_err,
                new.err_bound, new.correct) == (old.time_s, old.retransmissions,
                                                old.bytes_sent, old.max_abs_err,
                                                old.err_bound, old.correct)
        assert new.mean_abs_err == pytest.approx(old.mean_abs_err, rel=1e-12)
    if loss >= 3.0:
        assert sum(r.retransmissions for r in streamed.records) > 0


@pytest.mark.parametrize("loss", [0.0, 2.0])
def test_a_streamed_ring_drawn_ahead_is_the_same_run(monkeypatch, loss):
    """Segments of a slice or more (here 4 x 20,000 values): the ranks' reads and the check's
    verdicts go to the drawing thread, and the run is the one with whole vectors."""
    from inaemu.sim import seekable_gradient
    taken = []
    original = seekable_gradient.SeekableGradient._take

    def take(self):
        taken.append(self._pending[1] - self._pending[0])
        return original(self)
    monkeypatch.setattr(seekable_gradient.SeekableGradient, "_take", take)
    topology = star(4)
    jobs = [SimJob(1, tuple(h.name for h in topology.hosts))]
    kept, streamed, kept_trace, streamed_trace = _same_run(
        topology, jobs, size_bytes=4 * 80_000, seed=3, loss=loss, bw=100)
    assert taken, "nothing was drawn ahead"
    assert streamed_trace == kept_trace and streamed.correct
    for old, new in zip(kept.records, streamed.records):
        assert (new.time_s, new.max_abs_err, new.err_bound, new.correct) == \
            (old.time_s, old.max_abs_err, old.err_bound, old.correct)
        assert new.mean_abs_err == pytest.approx(old.mean_abs_err, rel=1e-12)


def _ring_checks_made(monkeypatch) -> list:
    """The ring checks the runs below make (`StreamedCheck.for_ring`), as they are made."""
    from inaemu.sim import streamed_check
    made = []
    for_ring = StreamedCheck.for_ring.__func__

    def spy(cls, **kwargs):
        made.append(for_ring(cls, **kwargs))
        return made[-1]
    monkeypatch.setattr(streamed_check.StreamedCheck, "for_ring", classmethod(spy))
    return made


@pytest.mark.parametrize("per_rank", [3000, 20_000])
def test_a_streamed_ring_with_its_marks_made_ahead_is_the_same_run_and_skips_nothing(
        monkeypatch, per_rank):
    """The ranks' marks stepped in C before the run (`StreamedCheck.marks_ahead`) against
    marks recorded by the reads: the same packets and verdicts; and no rank's reader draws a
    value it does not read."""
    from inaemu.sim import seekable_gradient
    made = _ring_checks_made(monkeypatch)
    topology = star(4)
    jobs = [SimJob(1, tuple(h.name for h in topology.hosts))]
    runs = []
    for marks_after in (seekable_gradient.marks_after, lambda *args: None):
        monkeypatch.setattr(seekable_gradient, "marks_after", marks_after)
        trace: list[str] = []
        result = simulate(topology, jobs, algo="ring", keep_results=False, seed=6, bw=1000,
                          size_bytes=4 * 4 * per_rank, loss=1.0, trace=trace)
        runs.append((trace, [record.as_dict() for record in result.records],
                     [reader.drawn for reader in made[-1]._seekables]))
    (trace, records, drawn), (old_trace, old_records, old_drawn) = runs
    assert trace == old_trace and records == old_records
    assert all(record["correct"] for record in records)
    if fast_normals.marks_after((0, 0, 0, 0), 1, [1]) is not None:
        assert drawn == [4 * per_rank] * 4          # each value once, none skipped
        if per_rank < SLICE_VALUES:                 # (else the skips were the drawing thread's)
            assert sum(old_drawn) > sum(drawn)      # the first reads skipped, as before


def test_a_streamed_ring_with_a_dead_rank():
    topology = star(4)
    jobs = [SimJob(1, tuple(h.name for h in topology.hosts))]
    kwargs = dict(size_bytes=4 * 50_000, seed=2, bw=100, deaths={"h3": 0.001},
                  stall_timeout=0.05)
    kept, streamed, kept_trace, streamed_trace = _same_run(topology, jobs, **kwargs)
    assert streamed_trace == kept_trace
    assert [(r.error, r.correct, r.max_abs_err) for r in streamed.records] == \
        [(r.error, r.correct, r.max_abs_err) for r in kept.records]
    assert not any(r.correct for r in streamed.records)


def _peak_mib(size_bytes: int, keep_results: bool) -> float:
    topology = star(4)
    jobs = [SimJob(1, tuple(h.name for h in topology.hosts))]
    tracemalloc.start()
    try:
        result = simulate(topology, jobs, algo="ring", size_bytes=size_bytes, seed=1, bw=1000,
                          keep_results=keep_results)
        assert result.correct
        return tracemalloc.get_traced_memory()[1] / (1 << 20)
    finally:
        tracemalloc.stop()


def test_a_streamed_ring_s_memory_does_not_grow_with_the_vector():
    """What the streamed ring holds is in flight: the window, the queues, and the segment a
    rank's forwarded slices wait behind (1/n of the vector per rank: its first send); with
    whole vectors, inputs, accumulators, results and float64 references grow 4-5x the inputs."""
    small, large = 1 << 20, 4 << 20            # bytes per worker; 4 workers
    added = 4 * (large - small) / (1 << 20)    # MiB more input in the large run
    kept_growth = _peak_mib(large, True) - _peak_mib(small, True)
    streamed_growth = _peak_mib(large, False) - _peak_mib(small, False)
    assert kept_growth > 3 * added
    assert streamed_growth < 0.6 * added


@pytest.mark.parametrize("per_rank", [3000, 20_000])
def test_a_streamed_ring_judges_on_the_drawing_thread_and_reads_ahead_only_whole_slices(
        monkeypatch, per_rank):
    """The check's verdicts (every rank's values of each block) are judged on the drawing
    thread, and the ranks' next reads drawn ahead: by fastnormals.c's thread at any size, on
    a Python thread only for segments of a slice or more (there a hand-off per small read
    cost the loop more than the draw)."""
    made = _ring_checks_made(monkeypatch)
    judged_later = []
    judge_later = StreamedCheck._judge_later
    monkeypatch.setattr(StreamedCheck, "_judge_later",
                        lambda self, *a: judged_later.append(judge_later(self, *a)) or
                        judged_later[-1])
    topology = star(3)
    jobs = [SimJob(1, tuple(h.name for h in topology.hosts))]
    result = simulate(topology, jobs, algo="ring", keep_results=False, seed=2, bw=1000,
                      size_bytes=4 * 3 * per_rank)
    assert result.correct and len(made) == 1
    whole_slices = per_rank >= SLICE_VALUES
    assert all(reader._ahead is not None for reader in made[0]._seekables)
    assert all(reader._thread_ahead == whole_slices for reader in made[0]._seekables)
    if fast_normals.job_from((0, 0), 1, 0, 1.0) is not None:    # (C jobs here)
        readers = made[0]._seekables
        assert all(reader.drawn_ahead > 0.6 * reader.drawn for reader in readers)
    assert judged_later and all(later is not None for later in judged_later)
