"""The native core's JobLanes (inaemu/sim/native/joblanes.c): a streamed INA job's RESULT lanes
kept once for all its workers. Whatever the order of stores, takes and ends, and whatever
bytes each worker stores, a worker is handed exactly the bytes it stored (zeros in rows it did
not), as if each worker kept its own copy (the Python codec's `_block_sums`); equal blocks are
one object; and nothing stays held once every worker has taken every block."""

from __future__ import annotations

import random

import pytest

from inaemu.sim import SimJob, simulate
from inaemu.sim.native import native_classes, native_module, why_not
from inaemu.sim.network import SimNetwork
from topologies.builders import fat_tree, star

pytestmark = pytest.mark.skipif(native_classes() is None,
                                reason=f"no native core here: {why_not()}")

ROW = 8


class OwnCopies:
    """The model: every worker's blocks kept apart, as the Python codec keeps them."""

    def __init__(self):
        self.blocks: dict[tuple[int, int], bytearray] = {}

    def store(self, worker, block, row, rows, lanes):
        own = self.blocks.setdefault((worker, block), bytearray(rows * ROW))
        own[row * ROW:(row + 1) * ROW] = lanes

    def take(self, worker, block):
        return bytes(self.blocks.pop((worker, block)))


def _row(block, row, variant=0):
    return bytes([block, row, variant]) * 2 + bytes([block ^ row, variant])


@pytest.mark.parametrize("seed", range(40))
def test_every_worker_is_handed_the_bytes_it_stored(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 6)
    shapes = {block: rng.randint(1, 5) for block in range(rng.randint(1, 4))}
    lanes, model = native_module().JobLanes(n), OwnCopies()
    # each worker's stores in an order of its own; some rows stored twice, some differ
    plans = []
    for worker in range(n):
        plan = [(block, row) for block, rows in shapes.items() for row in range(rows)
                if rng.random() < 0.9]
        rng.shuffle(plan)
        plan += rng.sample(plan, k=min(len(plan), rng.randint(0, 2)))
        plans.append(plan)
    taken: dict[tuple[int, int], bytes] = {}
    ended = set()
    while any(plans):
        worker = rng.choice([w for w in range(n) if plans[w]])
        block, row = plans[worker].pop(0)
        variant = 1 if rng.random() < 0.1 else 0
        data = _row(block, row, variant)
        lanes.store(worker, block, row, shapes[block], data)
        model.store(worker, block, row, shapes[block], data)
        if rng.random() < 0.05 and worker not in ended:
            lanes.end(worker)
            ended.add(worker)
        # hand a block over once the worker stored no more of it (sometimes before every row)
        for b in list(shapes):
            if (worker, b) in model.blocks and all(p[0] != b for p in plans[worker]) \
                    and rng.random() < 0.7:
                got, want = lanes.take(worker, b), model.take(worker, b)
                assert bytes(got) == want
                taken[worker, b] = got
    for (worker, block) in list(model.blocks):
        assert bytes(lanes.take(worker, block)) == model.take(worker, block)
    for worker in range(n):        # (a block a worker never stored into waits for its end)
        lanes.end(worker)
    counts = lanes.counts()
    assert counts["blocks_held"] == 0 and counts["own_copies"] == 0
    # workers handed the same complete, shared bytes share one object
    for (w1, b1), got1 in taken.items():
        for (w2, b2), got2 in taken.items():
            if b1 == b2 and isinstance(got1, bytes) and isinstance(got2, bytes):
                assert got1 is got2


def test_equal_lanes_are_one_object_and_a_different_row_is_kept_apart():
    lanes = native_module().JobLanes(3)
    for worker in range(3):
        lanes.store(worker, 0, 1, 2, _row(0, 1))
        lanes.store(worker, 0, 0, 2, _row(0, 0, 1 if worker == 2 else 0))
    first, second, third = (lanes.take(w, 0) for w in range(3))
    assert first is second and isinstance(first, bytes)
    assert first == _row(0, 0) + _row(0, 1)
    assert third == _row(0, 0, 1) + _row(0, 1) and third is not first
    counts = lanes.counts()
    assert (counts["shared_rows"], counts["private_rows"]) == (5, 1)
    assert counts["shared_taken"] == 2 and counts["blocks_held"] == 0


def test_a_block_taken_before_every_row_is_the_rows_stored_and_zeros():
    lanes = native_module().JobLanes(2)
    lanes.store(0, 3, 0, 3, _row(3, 0))
    lanes.store(1, 3, 2, 3, _row(3, 2))
    lanes.store(0, 3, 2, 3, _row(3, 2))
    assert lanes.take(0, 3) == _row(3, 0) + bytes(ROW) + _row(3, 2)
    assert lanes.take(1, 3) == bytes(2 * ROW) + _row(3, 2)


def test_an_ended_workers_lanes_stay_its_own_and_the_others_are_let_go():
    lanes = native_module().JobLanes(2)
    lanes.store(0, 0, 0, 1, _row(0, 0))
    lanes.store(1, 0, 0, 1, _row(0, 0))
    lanes.end(1)
    lanes.store(1, 1, 0, 1, _row(1, 0, 1))      # after its end: its own copy
    assert lanes.take(0, 0) == _row(0, 0)
    assert lanes.counts()["blocks_held"] == 0
    assert lanes.take(1, 0) == _row(0, 0) and lanes.take(1, 1) == _row(1, 0, 1)
    assert lanes.counts()["own_copies"] == 0


def test_bad_requests_are_refused_with_what_was_wrong():
    lanes = native_module().JobLanes(2)
    with pytest.raises(ValueError, match="worker 2 of a job of 2"):
        lanes.store(2, 0, 0, 1, _row(0, 0))
    with pytest.raises(ValueError, match="row 1 of a block of 1 rows"):
        lanes.store(0, 0, 1, 1, _row(0, 0))
    lanes.store(0, 0, 0, 2, _row(0, 0))
    with pytest.raises(ValueError, match="block 0 holds 2 rows of 8 bytes, not 3 of 8"):
        lanes.store(1, 0, 0, 3, _row(0, 0))
    with pytest.raises(ValueError, match="worker 1 has no lanes of block 0"):
        lanes.take(1, 0)
    with pytest.raises(ValueError, match="block -1 out of range"):
        lanes.take(0, -1)
    with pytest.raises(ValueError, match="block 16777216 out of range"):
        lanes.store(0, 1 << 24, 0, 1, _row(0, 0))
    with pytest.raises(ValueError, match="a job of 0 workers"):
        native_module().JobLanes(0)
    # nothing the refused requests touched changed what worker 0 stored
    assert lanes.take(0, 0) == _row(0, 0) + bytes(ROW)


@pytest.mark.parametrize("topology_of, jobs_of", [
    (lambda: star(4), lambda t: [SimJob(1, tuple(h.name for h in t.hosts))]),
    (lambda: fat_tree(4), lambda t: [SimJob(2, tuple(h.name for h in t.hosts), switch="c0",
                                            hierarchical=True)]),
])
def test_a_native_streamed_run_shares_its_jobs_lanes(monkeypatch, topology_of, jobs_of):
    made = []
    original = SimNetwork.job_lanes

    def job_lanes(self, n):
        made.append(original(self, n))
        return made[-1]
    monkeypatch.setattr(SimNetwork, "job_lanes", job_lanes)
    topology = topology_of()
    # 70,001 values at 64 lanes: two codec blocks and a partial last chunk
    result = simulate(topology, jobs_of(topology), algo="ina", size_bytes=4 * 70_001, seed=3,
                      bw=1000, elems_k=64, keep_results=False, core="native")
    assert all(r.correct for r in result.records)
    (lanes,) = made
    counts = lanes.counts()
    workers = len(result.records)
    assert counts["shared_taken"] == 2 * workers          # every block, every worker
    assert counts["private_rows"] == 0 and counts["shared_rows"] == workers * 1094
    assert counts["blocks_held"] == 0 and counts["own_copies"] == 0


class _LanesSink:
    """A sink whose codec keeps its lanes in `store` (what StreamedCheck's sinks offer)."""

    def __init__(self, store, index):
        self.lanes, self.blocks = (None if store is None else (store, index)), {}

    def __call__(self, first, values):
        self.blocks[first] = values


def test_codecs_keeping_their_lanes_in_a_job_store_hand_over_the_sums_of_their_own():
    """hosts/ina_codec.py's Python store and take over JobLanes: two workers of a job, given
    the same RESULTs but for one chunk, get what codecs keeping their own copies get."""
    import numpy as np

    from hosts import quantize as qz
    from hosts.gradient_stream import GradientStream
    from hosts.ina_codec import BLOCK_VALUES, FloatCodec
    from hosts.ina_wire import HEADER_BYTES

    size = 2 * BLOCK_VALUES + 77
    store = native_module().JobLanes(2)
    sinks = [_LanesSink(store, 0), _LanesSink(store, 1), _LanesSink(None, 0),
             _LanesSink(None, 1)]
    codecs = [FloatCodec(GradientStream(4, w % 2, size), job=1, worker=w % 2, n=2, k=8,
                         pool_size=4, fmt="int32", scaling="job", divisor=2, first_position=0,
                         sink=sink) for w, sink in enumerate(sinks)]
    offer = np.full(8, qz.float32_bits(8.0), np.int64)
    rng = np.random.default_rng(1)
    for codec in codecs:
        codec.on_max(offer)
    for chunk in range(codecs[0].chunks):
        lanes = rng.integers(-99, 99, 8, np.int32).astype(">i4").tobytes()
        for w, codec in enumerate(codecs):
            payload = codec.contribution(chunk, chunk % 4, (chunk // 4) % 2)
            mine = lanes if not (w % 2 and chunk == 5000) else bytes(len(lanes))
            codec.store(chunk, payload[:HEADER_BYTES] + mine)
    for shared, own in ((sinks[0], sinks[2]), (sinks[1], sinks[3])):
        assert sorted(shared.blocks) == sorted(own.blocks) == [0, BLOCK_VALUES, 2 * BLOCK_VALUES]
        for first in own.blocks:
            assert np.array_equal(shared.blocks[first], own.blocks[first])
    assert not np.array_equal(sinks[0].blocks[0], sinks[1].blocks[0])   # (chunk 5000 differs)
    counts = store.counts()
    assert counts["blocks_held"] == 0 and counts["own_copies"] == 0
    assert counts["shared_taken"] == 5 and counts["private_rows"] > 0
