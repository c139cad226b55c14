"""The ring's per-segment path in C (inaemu/sim/native/ringpath.c, docs/sim-native.md "The ring's
per-segment path in C") against the Python ring worker and transport, event for event: the
same per-link trace (every send with its frame's CRC, every loss and drop, at its virtual
time), records, result bytes, link counters, virtual time and event count on both cores, over
seeds, loss rates, topologies, with and without Reno, float64 accumulation, unshaped links,
background TCP flows sharing the links, the plan collectives over the same transport, and the
ring streamed (runs without kept results: RingSession reading its values per slice, the
streamed check's verdicts; docs/sim-native.md "The ring streamed"); and
that the C path really carries the common case (the Python handlers it falls back to are not
called in a lossless run) and really hands the rest to the Python (they are under loss)."""

import pytest

from hosts.ring_session import RingSession
from inaemu.sim import SimJob, simulate
from inaemu.sim import ring_worker
from inaemu.sim.background import BulkFlow
from inaemu.sim.frames import ip_bytes
from inaemu.sim.native import native_loop_class, why_not
from inaemu.sim.network import SimNetwork
from inaemu.sim.reliable import TransportConfig
from inaemu.sim.ring_worker import RingWorker
from inaemu.sim.setup import prepare
from topologies.builders import fat_tree, leaf_spine, star

import numpy as np

pytestmark = pytest.mark.skipif(native_loop_class() is None,
                                reason=f"no native core here: {why_not()}")

RENO = TransportConfig(congestion="reno")


def _run(core, topology, jobs, **kwargs):
    """The run's trace, records, results and counters, and each ring worker's state at the
    run's end, in creation order: its sender's RTT estimate (srtt, rttvar, RTO: what the
    samples the C takes made of it) and timeouts, its session's message and byte counts.
    (Until session 48 these were read in RingWorker.close, which only the scenario engine
    calls: `simulate` never did, and the comparison was of two empty lists.)"""
    trace, workers = [], []
    init = RingWorker.__init__

    def made(worker, *args, **kw):
        init(worker, *args, **kw)
        workers.append(worker)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RingWorker, "__init__", made)
        result = simulate(topology, jobs, trace=trace, core=core, **kwargs)
    estimates = []
    for worker in workers:
        sender, counters = worker.sender, worker.session.counters
        estimates.append((worker.session.rank, sender._srtt, sender._rttvar, sender._rto,
                          sender.counters.timeouts, counters.messages_sent,
                          counters.bytes_sent, counters.messages_received,
                          counters.bytes_received))
    if kwargs.get("algo") == "ring":
        assert len(estimates) == sum(len(job.workers) for job in jobs)
    return (trace, [r.as_dict() for r in result.records],
            [None if r.result is None else r.result.tobytes() for r in result.records],
            result.virtual_s, result.events, result.frames, result.links, estimates)


def _same_on_both_cores(topology, jobs, **kwargs):
    python = _run("python", topology, jobs, **kwargs)
    native = _run("native", topology, jobs, **kwargs)
    assert python[0], "no trace recorded"
    assert native[0] == python[0]
    assert native[1:] == python[1:]
    return python


def _hosts(topology, count=None):
    return tuple(h.name for h in topology.hosts)[:count]


TOPOLOGIES = [
    ("star", lambda: star(4), 4),
    ("leaf-spine", lambda: leaf_spine(2, 2, 3), 6),
    ("fat-tree", lambda: fat_tree(4), 8),
]


@pytest.mark.parametrize("congestion", ["none", "reno"])
@pytest.mark.parametrize("loss", [0.0, 1.0, 3.0])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("topology", TOPOLOGIES, ids=[t[0] for t in TOPOLOGIES])
def test_the_ring_runs_the_same_events_on_both_cores(topology, seed, loss, congestion):
    _name, topology_of, workers = topology
    net = topology_of()
    transport = RENO if congestion == "reno" else TransportConfig()
    python = _same_on_both_cores(net, [SimJob(1, _hosts(net, workers))], algo="ring",
                                 size_bytes=4 * 20011, seed=seed, loss=loss, bw=100,
                                 transport=transport)
    assert all(record["correct"] for record in python[1])
    if loss >= 3.0:
        assert any(" lost " in line for line in python[0])


@pytest.mark.parametrize("loss,seed,topology", [
    (3.0, 5, TOPOLOGIES[2]), (5.0, 0, TOPOLOGIES[2]), (5.0, 1, TOPOLOGIES[2]),
    (10.0, 3, TOPOLOGIES[0]), (10.0, 5, TOPOLOGIES[0])], ids=lambda v: str(v[0]) if
    isinstance(v, tuple) else str(v))
def test_the_ring_under_heavy_loss_runs_the_same_events(loss, seed, topology):
    """Runs with ACKs that acknowledge a resend together with segments sent once whose SACK
    was lost: Karn's rule over the whole ACK (no RTT sample from it) in the C too. A C that
    samples those segments (their RTT is the hole's repair) differs in these runs' traces."""
    _name, topology_of, workers = topology
    net = topology_of()
    python = _same_on_both_cores(net, [SimJob(1, _hosts(net, workers))], algo="ring",
                                 size_bytes=4 * 20011, seed=seed, loss=loss, bw=100)
    assert all(record["correct"] for record in python[1])


@pytest.mark.parametrize("congestion", ["none", "reno"])
@pytest.mark.parametrize("loss", [0.0, 1.0, 3.0])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("topology", TOPOLOGIES, ids=[t[0] for t in TOPOLOGIES])
def test_the_streamed_ring_runs_the_same_events_on_both_cores(topology, seed, loss, congestion):
    """Without kept results (`inaemu run`'s way): the ranks read their inputs per slice and
    the check judges each slice of the results; the C path carries the same transport."""
    _name, topology_of, workers = topology
    net = topology_of()
    transport = RENO if congestion == "reno" else TransportConfig()
    python = _same_on_both_cores(net, [SimJob(1, _hosts(net, workers))], algo="ring",
                                 size_bytes=4 * 40009, seed=seed, loss=loss, bw=100,
                                 transport=transport, keep_results=False)
    assert all(record["correct"] for record in python[1])
    assert all(result is None for result in python[2])


@pytest.mark.parametrize("streamed", [False, True], ids=["kept", "streamed"])
@pytest.mark.parametrize("seed", [0, 5])
@pytest.mark.parametrize("case", ["unshaped", "slow links", "float64", "small window",
                                  "slices", "few retries", "slow switch"])
def test_the_ring_s_other_settings_run_the_same_events(case, seed, streamed):
    """Unshaped links (no TCP Small Queues: no on_left), 10 Mbit/s links (a NIC budget of
    exactly two full frames, which the second one fills to the byte), float64 accumulation
    (8-byte values in the messages whose ends the C finds, and whose sums it makes when
    streamed), a window of a few segments, segments of another size, one retry (a timeout
    count the ACKs must reset), a switch that drops at its input."""
    from inaemu.sim.switch_node import SwitchCost
    net = star(5)
    kwargs = dict(algo="ring", size_bytes=4 * 9001, seed=seed, loss=2.0, bw=100,
                  keep_results=not streamed)
    if case == "unshaped":
        kwargs["bw"] = None
    elif case == "slow links":
        kwargs["bw"] = 10
    elif case == "few retries":
        kwargs.update(loss=5.0, transport=TransportConfig(max_retx=1))
    elif case == "float64":
        kwargs["ring_accumulate"] = "float64"
    elif case == "small window":
        kwargs["transport"] = TransportConfig(window_bytes=4 * 1448, ack_every=3)
    elif case == "slices":
        kwargs["transport"] = TransportConfig(mss=1000, dupthresh=2)
    else:
        kwargs.update(switch_cost=SwitchCost.from_pps(40_000), switch_queue_packets=4)
    python = _same_on_both_cores(net, [SimJob(1, _hosts(net))], **kwargs)
    if case != "few retries":
        assert all(record["correct"] for record in python[1])


@pytest.mark.parametrize("algo", ["ps", "hring", "dbtree", "rhd", "torus"])
@pytest.mark.parametrize("loss", [0.0, 3.0])
def test_the_plan_collectives_run_the_same_events(algo, loss):
    """The collectives over the same transport (collective_worker.py, Python on both cores)."""
    net = fat_tree(4)
    python = _same_on_both_cores(net, [SimJob(1, _hosts(net, 8))], algo=algo,
                                 size_bytes=4 * 6007, seed=3, loss=loss, bw=100)
    assert all(record["correct"] for record in python[1])


def _ring_with_background(core, loss):
    """Three ring ranks on a star with two Reno bulk flows through their links, one rank
    started 2 ms after the others."""
    topology = star(5, bw=50)
    trace = []
    setup = prepare(SimNetwork(topology, seed=0), [], elems_k=32, pool_size=8, ina=False)
    net = SimNetwork(topology, seed=4, switches=setup.switches, loss_percent=loss, trace=trace,
                     core=core)
    ranks = ["h1", "h2", "h3"]
    ended, workers = [], []
    rng = np.random.default_rng(9)
    vectors = [rng.standard_normal(30011).astype(np.float32) for _ in ranks]
    for w, host in enumerate(ranks):
        right = net.topology.host(ranks[(w + 1) % 3]).ip
        left = net.topology.host(ranks[(w - 1) % 3]).ip
        workers.append(RingWorker(net.hosts[host], RingSession(rank=w, n=3), ip_bytes(right),
                                  ip_bytes(left), vectors[w], TransportConfig(), 10.0,
                                  ended.append))
    flows = [BulkFlow(net, "h4", "h2", size_bytes=600_000, port=6000),
             BulkFlow(net, "h1", "h5", size_bytes=400_000, port=6100)]
    for flow in flows:
        flow.start()
    for worker in workers[:2]:
        worker.start()
    # the third rank starts late: its left neighbour's first bytes wait in `_early` (the
    # Python's path), then the C takes over
    net.loop.at(0.002, workers[2].start)
    net.loop.run(until=30.0)
    assert len(ended) == 3
    outcomes = [(w.outcome.finished_at, w.outcome.error, w.outcome.retransmissions,
                 w.outcome.result.tobytes(), w.sender.counters, w.receiver.duplicates)
                for w in workers]
    return trace, outcomes, [(f.bytes_delivered, f.stopped_at, f.sender.counters)
                             for f in flows], net.loop.now


@pytest.mark.parametrize("loss", [0.0, 1.0, 3.0])
def test_the_ring_beside_background_flows_runs_the_same_events(loss):
    python = _ring_with_background("python", loss)
    native = _ring_with_background("native", loss)
    assert python[0]
    assert native == python
    assert np.array_equal(np.frombuffer(python[1][0][3], np.float32),
                          np.frombuffer(python[1][1][3], np.float32))


def _python_calls(monkeypatch, loss, transport=TransportConfig(), keep_results=True):
    """How often the native core's ring workers called each Python handler, and the run."""
    calls = {name: 0 for name in ("_on_data", "_on_ack", "_on_left", "_deliver",
                                  "_write_python", "_on_rto")}
    for name in calls:
        original = getattr(RingWorker, name)

        def counted(self, *args, _original=original, _name=name):
            calls[_name] += 1
            return _original(self, *args)
        monkeypatch.setattr(RingWorker, name, counted)
    net = star(4)
    result = simulate(net, [SimJob(1, _hosts(net))], algo="ring", size_bytes=4 * 20011,
                      seed=1, loss=loss, bw=100, core="native", transport=transport,
                      keep_results=keep_results)
    return calls, result


def test_the_c_path_carries_the_common_case(monkeypatch):
    """Lossless: no segment, ACK or departure falls back to the Python; the session gets
    whole messages only (one `_deliver` per slice message, not one per segment)."""
    calls, result = _python_calls(monkeypatch, 0.0)
    assert all(record.correct for record in result.records)
    assert calls["_on_data"] == calls["_on_ack"] == calls["_on_left"] == 0
    assert calls["_write_python"] == 0
    messages_per_rank = 2 * 3            # 2 phases x (n - 1) steps, one slice of ~5,003 values
    assert calls["_deliver"] == 4 * messages_per_rank
    assert result.frames > 10 * calls["_deliver"]


def test_the_c_path_delivers_a_streamed_call_s_messages(monkeypatch):
    """Streamed (`inaemu run`'s way), lossless: the C hands the session each whole message
    itself (RingSession.receive's `_apply`: the own slice read, added in or kept, forwarded,
    given to the sink); the Python `_deliver` takes only each phase's last message, whose
    transition it makes."""
    calls, result = _python_calls(monkeypatch, 0.0, keep_results=False)
    assert all(record.correct for record in result.records)
    assert calls["_on_data"] == calls["_write_python"] == 0
    assert calls["_deliver"] == 4 * 2                # 4 ranks x 2 phases' last messages


@pytest.mark.parametrize("loss", [0.0, 1.0])
@pytest.mark.parametrize("accumulate", ["float32", "float64"])
def test_segments_of_several_slices_run_the_same_events_streamed(accumulate, loss):
    """Segments longer than a slice (16,384 values): the C moves on to the segment's next
    slice, not the next step, after all but its last; the same events on both cores."""
    net = star(4)
    python = _same_on_both_cores(net, [SimJob(1, _hosts(net))], algo="ring",
                                 size_bytes=4 * (4 * 40_960 + 3), seed=3, loss=loss, bw=1000,
                                 ring_accumulate=accumulate, keep_results=False)
    assert all(record["correct"] for record in python[1])



@pytest.mark.parametrize("loss", [0.0, 2.0])
@pytest.mark.parametrize("accumulate", ["float32", "float64"])
def test_values_cut_between_segments_run_the_same_events(accumulate, loss):
    """Segments of 1,001 bytes: a message's values are cut between the bytes the decoder
    holds and the segment that completes it, which the C swaps out of the two in one pass
    (ringpath.c `swap_from_two`); the same events on both cores and the right sums."""
    net = star(4)
    python = _same_on_both_cores(net, [SimJob(1, _hosts(net))], algo="ring",
                                 size_bytes=4 * 20011, seed=2, loss=loss, bw=100,
                                 ring_accumulate=accumulate, keep_results=False,
                                 transport=TransportConfig(mss=1001))
    assert all(record["correct"] for record in python[1])


def test_the_c_path_delivers_messages_cut_between_segments(monkeypatch):
    """The C, not the Python `_deliver`, takes the streamed messages whose values the
    segments cut (all but each phase's last, as with whole values)."""
    calls, result = _python_calls(monkeypatch, 0.0, transport=TransportConfig(mss=1001),
                                  keep_results=False)
    assert all(record.correct for record in result.records)
    assert calls["_deliver"] == 4 * 2

def test_the_c_path_takes_loss_recovery_and_leaves_timers_and_reno_to_the_python(
        monkeypatch):
    """Under loss the C takes the out-of-order segments, the SACKs and the fast
    retransmissions too; only the timers' expiries run the Python. With Reno every ACK,
    departure and write does (the C keeps the receiver's side only)."""
    calls, result = _python_calls(monkeypatch, 3.0)
    assert all(record.correct for record in result.records)
    assert sum(record.retransmissions for record in result.records) > 0
    assert calls["_on_ack"] == calls["_on_left"] == calls["_write_python"] == 0
    assert calls["_on_rto"] > 0
    assert calls["_on_data"] <= 3         # at most what arrives for a rank that has ended
    monkeypatch.undo()
    calls, _ = _python_calls(monkeypatch, 0.0, RENO)
    assert calls["_on_ack"] > 0 and calls["_on_left"] > 0 and calls["_write_python"] > 0
    assert calls["_on_data"] == 0


@pytest.mark.parametrize("loss", [0.0, 3.0])
def test_the_host_gives_the_c_path_its_segments_as_frames(monkeypatch, loss):
    """A rank's segments and ACKs reach its C path as the frames themselves, read in place
    (hostport.c `receive_in_place`): all but the first on each port (the host looks its
    listener up for that one), lossless or not (out-of-order segments, SACKs)."""
    paths = []
    original = RingWorker.__init__

    def kept(self, *args, **kwargs):
        original(self, *args, **kwargs)
        paths.append(self._data_handler.__self__)
    monkeypatch.setattr(RingWorker, "__init__", kept)
    net = star(4)
    result = simulate(net, [SimJob(1, _hosts(net))], algo="ring", size_bytes=4 * 20011,
                      seed=1, loss=loss, bw=100, core="native")
    assert all(record.correct for record in result.records)
    assert len(paths) == 4
    received = sum(record.packets_received for record in result.records)  # data and ACKs
    assert received - 2 * 4 <= sum(path.in_place for path in paths) <= received


def test_the_python_ring_worker_is_kept_where_asked(monkeypatch):
    """ring_worker.NATIVE_PATH = False: the native host runs the Python handlers (the same
    events as with the C path)."""
    net = star(4)
    kwargs = dict(algo="ring", size_bytes=4 * 20011, seed=2, loss=1.0, bw=100)
    with_c = _run("native", net, [SimJob(1, _hosts(net))], **kwargs)
    monkeypatch.setattr(ring_worker, "NATIVE_PATH", False)
    without = _run("native", net, [SimJob(1, _hosts(net))], **kwargs)
    assert with_c == without


def test_a_finished_ring_is_collected():
    """A rank's RingPath and its worker refer to each other (the listeners, `on_left`): the
    cyclic collector frees them once the network is dropped."""
    import gc
    import weakref
    topology = star(3, bw=50)
    setup = prepare(SimNetwork(topology, seed=0), [], elems_k=32, pool_size=8, ina=False)
    net = SimNetwork(topology, seed=1, switches=setup.switches, core="native")
    ended = []
    workers = [RingWorker(net.hosts[f"h{w + 1}"], RingSession(rank=w, n=3),
                          ip_bytes(net.topology.host(f"h{(w + 1) % 3 + 1}").ip),
                          ip_bytes(net.topology.host(f"h{(w - 1) % 3 + 1}").ip),
                          np.ones(3001, np.float32), TransportConfig(), 10.0, ended.append)
               for w in range(3)]
    for worker in workers:
        worker.start()
    net.loop.run(until=5.0)
    assert len(ended) == 3 and all(w.outcome.error is None for w in workers)
    assert all(type(w._data_handler).__name__ == "builtin_function_or_method" for w in workers)
    refs = [weakref.ref(w) for w in workers]
    del workers, ended, net, worker
    gc.collect()
    assert all(ref() is None for ref in refs)


def test_a_message_s_buffer_takes_its_memory_once(monkeypatch):
    """The C absorbs a message's first segments into the decoder's buffer with memory for the
    whole message at once (one allocation, not a realloc and a copy per ~1,460-byte segment):
    when the completing segment is delivered, the buffer has room for the message, no more
    (grown a segment at a time it had a growth margin beyond what it held)."""
    import sys
    empty = sys.getsizeof(bytearray())
    room = []
    original = RingWorker._deliver

    def deliver(self, data):
        buffer = self.session._decoder._buffer
        if buffer:                               # (a message that took several segments)
            room.append((sys.getsizeof(buffer) - empty, len(buffer) + len(data)))
        return original(self, data)
    monkeypatch.setattr(RingWorker, "_deliver", deliver)
    net = star(4)
    result = simulate(net, [SimJob(1, _hosts(net))], algo="ring", size_bytes=4 * 20011,
                      seed=1, bw=100, core="native")
    assert result.correct and len(room) == 4 * 2 * 3
    assert all(message <= allocated <= message + 8 for allocated, message in room), room
